package faults

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// load is a steady stream of AdmissionReviews to the mutating webhook from a
// few workers, as the API server sends them, from a client that behaves like a
// Service's endpoints: once the server's readiness fails, it sends no new
// request after propagation (the time a cluster takes to drop a replica that
// is not ready from the endpoints the API server uses).
type load struct {
	// pause, when set, is each worker's wait between requests: a steady load
	// instead of as fast as the server answers.
	pause                   time.Duration
	sent, failed, afterTerm atomic.Int64
	terminated              atomic.Bool
	stop                    atomic.Bool
	errs                    sync.Map // first error text → count, for the report
}

func (l *load) run(url, probe string, workers int, propagation time.Duration) (wait func()) {
	body := review()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // a loopback test server's throwaway certificate
		MaxIdleConnsPerHost: workers,
	}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for !l.stop.Load() {
			resp, err := http.Get("http://" + probe + "/readyz")
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				time.Sleep(propagation)
				l.stop.Store(true)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	for range workers {
		wg.Go(func() {
			for !l.stop.Load() {
				l.sent.Add(1)
				if l.terminated.Load() {
					l.afterTerm.Add(1)
				}
				if err := post(client, url, body); err != nil {
					l.failed.Add(1)
					v, _ := l.errs.LoadOrStore(err.Error(), new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
				time.Sleep(l.pause)
			}
		})
	}
	return wg.Wait
}

func (l *load) errors() map[string]int64 {
	out := map[string]int64{}
	l.errs.Range(func(k, v any) bool { out[k.(string)] = v.(*atomic.Int64).Load(); return true })
	return out
}

func post(c *http.Client, url string, body []byte) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("undecodable answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK || out.Response == nil || !out.Response.Allowed {
		return fmt.Errorf("status %d, response %+v", resp.StatusCode, out.Response)
	}
	return nil
}

func review() []byte {
	raw, err := json.Marshal(fixtures.Job("team-a", "j").Obj().Object)
	Expect(err).NotTo(HaveOccurred())
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "load", Operation: admissionv1.Create, Namespace: "team-a", Name: "j",
			Kind:   metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			Object: runtime.RawExtension{Raw: raw}},
	})
	Expect(err).NotTo(HaveOccurred())
	return body
}

// propagation is how long the load keeps sending after readiness fails.
const propagation = time.Second

// terminateUnderLoad starts a server with the given shutdown delay, runs the
// load for a second, sends it the SIGTERM, and returns the load's figures once
// the client has stopped and the server has exited.
func terminateUnderLoad(delay time.Duration) (*load, time.Duration) {
	cfg := testenv.ConfigWithoutKueue()
	cfg.Policies.Directory = GinkgoT().TempDir()
	srv, err := env.StartServerOptions(ctx, env.Config, cfg, func(o *server.Options) { o.ShutdownDelay = delay })
	Expect(err).NotTo(HaveOccurred())
	o := env.WebhookInstallOptions
	url := fmt.Sprintf("https://%s:%d%s", o.LocalServingHost, o.LocalServingPort, webhookconfig.MutateWorkloadsPath)
	l := &load{}
	wait := l.run(url, srv.ProbeAddr, 4, propagation)
	time.Sleep(time.Second)
	Expect(l.failed.Load()).To(BeZero(), "the load runs cleanly before the SIGTERM: %v", l.errors())
	start := time.Now()
	l.terminated.Store(true)
	srv.Terminate()
	wait()
	Eventually(srv.Done()).WithTimeout(delay + 30*time.Second).Should(Receive(BeNil()))
	took := time.Since(start)
	AddReportEntry("SIGTERM under load", fmt.Sprintf("shutdown delay %v, endpoints propagation %v: %d requests sent, %d after the SIGTERM, %d failed %v; the server exited %v after the SIGTERM",
		delay, propagation, l.sent.Load(), l.afterTerm.Load(), l.failed.Load(), l.errors(), took.Round(10*time.Millisecond)))
	return l, took
}

var _ = Describe("a rollout's SIGTERM", func() {
	It("fails no request: readiness fails at once and the server keeps serving for the shutdown delay", func() {
		l, took := terminateUnderLoad(2 * propagation)
		Expect(l.sent.Load()).To(BeNumerically(">", 100), "the load was steady")
		Expect(l.failed.Load()).To(BeZero(), "failed: %v", l.errors())
		Expect(l.afterTerm.Load()).To(BeNumerically(">", 100), "the load kept coming while the endpoints caught up")
		Expect(took).To(BeNumerically(">=", 2*propagation), "the server served out its shutdown delay")
	})

	// The same client against a server that closes its listener at once: the
	// requests sent while the endpoints catch up are refused, which the API
	// server would not retry. This is what the delay is for.
	It("fails requests without the shutdown delay, which is what the delay is for", func() {
		l, _ := terminateUnderLoad(0)
		Expect(l.failed.Load()).To(BeNumerically(">", 0), "sent %d after the SIGTERM", l.afterTerm.Load())
	})
})
