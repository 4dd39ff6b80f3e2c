// Command load is kueue-guard's load harness: it sends AdmissionReview requests for
// realistic workloads straight to a running server's webhook paths, over TLS, from
// a fixed number of workers, and reports throughput and latency percentiles per
// path. It only targets loopback addresses and stops after --requests or
// --duration, whichever comes first.
//
//	make run                                   # in one shell
//	go run ./hack/load --addr 127.0.0.1:PORT   # the port make run prints
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

func main() {
	addr := flag.String("addr", "", "host:port of the webhook server (loopback only)")
	requests := flag.Int("requests", 5000, "requests per path")
	workers := flag.Int("concurrency", 8, "concurrent workers")
	duration := flag.Duration("duration", 60*time.Second, "stop after this long")
	namespace := flag.String("namespace", "team-a", "namespace of the generated workloads")
	queue := flag.String("queue", "team-a-queue", "queue the validating requests carry, as after defaulting")
	flag.Parse()
	if err := run(*addr, *namespace, *queue, *requests, *workers, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
}

func run(addr, namespace, queue string, requests, workers int, duration time.Duration) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return errors.New("--addr must be a loopback address: this harness never sends traffic elsewhere")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The local server's certificate is envtest's throwaway CA: reachability
		// and latency are measured here, not trust.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec
		MaxIdleConnsPerHost: workers,
	}}
	// The mutating path sees the Job as the user wrote it; the validating path
	// sees it after defaulting, with its queue, so the policies run too.
	objects := map[string]*fixtures.Object{}
	fresh := fixtures.Job(namespace, "load").Parallelism(4)
	queued := fixtures.Job(namespace, "load").Parallelism(4).Queue(queue)
	objects[webhookconfig.MutateWorkloadsPath], objects[webhookconfig.ValidateWorkloadsPath] = &fresh, &queued
	for _, path := range []string{webhookconfig.MutateWorkloadsPath, webhookconfig.ValidateWorkloadsPath} {
		raw, err := json.Marshal(objects[path].Object)
		if err != nil {
			return err
		}
		res, err := hammer(client, "https://"+addr+path, raw, namespace, requests, workers, duration)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		res.print(path)
	}
	return nil
}

type result struct {
	latencies []time.Duration
	errors    int64
	elapsed   time.Duration
}

func hammer(c *http.Client, url string, obj []byte, namespace string, n, workers int, max time.Duration) (*result, error) {
	var next atomic.Int64
	var errs atomic.Int64
	lat := make([][]time.Duration, workers)
	deadline := time.Now().Add(max)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) || time.Now().After(deadline) {
					return
				}
				body, err := review(i, namespace, obj)
				if err != nil {
					errs.Add(1)
					continue
				}
				t := time.Now()
				resp, err := c.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					errs.Add(1)
					continue
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat[w] = append(lat[w], time.Since(t))
				var ar admissionv1.AdmissionReview
				if resp.StatusCode != http.StatusOK || json.Unmarshal(out, &ar) != nil || ar.Response == nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	r := &result{errors: errs.Load(), elapsed: time.Since(start)}
	for _, l := range lat {
		r.latencies = append(r.latencies, l...)
	}
	if len(r.latencies) == 0 {
		return nil, errors.New("no request completed")
	}
	return r, nil
}

func review(i int64, namespace string, obj []byte) ([]byte, error) {
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(fmt.Sprintf("load-%d", i)),
			Kind:      metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			Resource:  metav1.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"},
			Name:      "load",
			Namespace: namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: obj},
		},
	})
}

func (r *result) print(path string) {
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	p := func(q float64) time.Duration { return r.latencies[int(q*float64(len(r.latencies)-1))] }
	fmt.Printf("%-22s %6d requests in %6.2fs = %7.0f req/s  p50 %-9v p90 %-9v p99 %-9v max %-9v errors %d\n",
		path, len(r.latencies), r.elapsed.Seconds(), float64(len(r.latencies))/r.elapsed.Seconds(),
		p(0.50).Round(time.Microsecond), p(0.90).Round(time.Microsecond), p(0.99).Round(time.Microsecond),
		r.latencies[len(r.latencies)-1].Round(time.Microsecond), r.errors)
}
