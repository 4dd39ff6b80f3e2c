package faults

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// validateReview is an AdmissionReview of obj's CREATE for the validating
// webhook.
func validateReview(obj map[string]any, ns, name string, gvk metav1.GroupVersionKind) []byte {
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "flood", Operation: admissionv1.Create, Namespace: ns, Name: name,
			Kind: gvk, Object: runtime.RawExtension{Raw: raw}},
	})
	Expect(err).NotTo(HaveOccurred())
	return body
}

// bigJobSet is a queued JobSet as large as the shape check lets through: 40
// replicated jobs of 10 containers with 60 environment variables each, about
// 2 MB and 100,000 values, every one of which a summary and the policy input
// read.
func bigJobSet(ns string) []byte {
	o := fixtures.JobSet(ns, "flood").Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Obj()
	var jobs []any
	for j := range 40 {
		var containers []any
		for c := range 10 {
			var envs []any
			for e := range 60 {
				envs = append(envs, map[string]any{"name": fmt.Sprintf("VAR_%d", e), "value": fmt.Sprintf("value-%d-%d-%d-padding-padding", j, c, e)})
			}
			containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", c), "image": "registry.example/x:1", "env": envs,
				"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}}})
		}
		jobs = append(jobs, map[string]any{"name": fmt.Sprintf("rj%d", j), "replicas": int64(1), "template": map[string]any{
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never", "containers": containers}}}}})
	}
	spec := o.Object["spec"].(map[string]any)
	spec["replicatedJobs"] = jobs
	return validateReview(o.Object, ns, "flood", metav1.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"})
}

// One namespace floods the webhook with the largest objects it lets through;
// another namespace's requests must still be answered inside the webhook
// timeout (a slower answer fails, as it would in the API server), and the
// server's memory must stay bounded. The latencies are reported, not asserted.
var _ = Describe("a flood of large objects from one namespace", func() {
	It("keeps another namespace's requests inside the webhook timeout and the heap bounded", func() {
		srv, _ := shippedPolicyServer(config.ProfileManaged)

		o := env.WebhookInstallOptions
		hook := fmt.Sprintf("https://%s:%d%s", o.LocalServingHost, o.LocalServingPort, webhookconfig.ValidateWorkloadsPath)
		// The client gives up after the faults suite's webhook timeout, as the
		// API server would: a request slower than that fails.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // a loopback test server's throwaway certificate
			MaxIdleConnsPerHost: 8,
		}}
		flood := bigJobSet("flood")
		quiet := validateReview(fixtures.Job("quiet", "j").Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Obj().Object,
			"quiet", "j", metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"})
		answer := func(body []byte) (bool, error) {
			resp, err := client.Post(hook, "application/json", bytes.NewReader(body))
			if err != nil {
				return false, err
			}
			defer resp.Body.Close()
			var out admissionv1.AdmissionReview
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				return false, fmt.Errorf("status %d: %w", resp.StatusCode, err)
			}
			return out.Response != nil && out.Response.Allowed, nil
		}
		Expect(answer(quiet)).To(BeTrue(), "the quiet namespace's Job is admitted")

		var stop atomic.Bool
		var floods, floodErrs, quietFailed atomic.Int64
		var mu sync.Mutex
		var latencies []time.Duration
		var peakHeap float64
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for !stop.Load() {
					floods.Add(1)
					if _, err := answer(flood); err != nil {
						floodErrs.Add(1)
					}
				}
			})
		}
		wg.Go(func() {
			defer GinkgoRecover()
			for !stop.Load() {
				start := time.Now()
				ok, err := answer(quiet)
				took := time.Since(start)
				if err != nil || !ok {
					quietFailed.Add(1)
				}
				mu.Lock()
				latencies = append(latencies, took)
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
		wg.Go(func() {
			for !stop.Load() {
				if v, err := testenv.MetricValue(srv.MetricAddr, "go_memstats_heap_inuse_bytes"); err == nil {
					mu.Lock()
					peakHeap = max(peakHeap, v)
					mu.Unlock()
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
		// The flood lasts this long by definition.
		time.Sleep(15 * time.Second)
		stop.Store(true)
		wg.Wait()

		slices.Sort(latencies)
		p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
		AddReportEntry("flood from one namespace", fmt.Sprintf(
			"15s of 4 workers sending a %.1f MB JobSet (%d requests, %d errors); the other namespace: %d requests, p50 %v, p99 %v, max %v, %d failed; peak heap in use %.0f MiB (the whole test process)",
			float64(len(flood))/1e6,
			floods.Load(),
			floodErrs.Load(),
			len(latencies),
			p(0.5).Round(time.Millisecond),
			p(0.99).Round(time.Millisecond),
			latencies[len(latencies)-1].Round(time.Millisecond),
			quietFailed.Load(),
			peakHeap/(1<<20),
		))
		Expect(quietFailed.Load()).To(BeZero(), "every request of the other namespace was answered, and inside the webhook timeout")
		Expect(peakHeap).To(BeNumerically("<", 512<<20), "under the chart's memory limit")
	})
})
