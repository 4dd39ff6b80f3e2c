package faults

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// burstFigures is what one burst measured.
type burstFigures struct {
	sent, throttled, quiet, quietFailed int64
	peakHeap, peakRSS                   float64
}

// burst has 24 workers send one namespace's large JobSet at once for d, each
// waiting out a 429's Retry-After as the API server's webhook client does,
// while another namespace sends a small Job every 20ms; it samples the
// server's memory meanwhile.
func burst(srv *testenv.Server, d time.Duration) burstFigures {
	GinkgoHelper()
	o := env.WebhookInstallOptions
	hook := fmt.Sprintf("https://%s:%d%s", o.LocalServingHost, o.LocalServingPort, webhookconfig.ValidateWorkloadsPath)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // a loopback test server's throwaway certificate
		MaxIdleConnsPerHost: 32,
	}}
	post := func(body []byte) int {
		resp, err := client.Post(hook, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	large := bigJobSet("burst")
	quiet := validateReview(fixtures.Job("quiet", "j").Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Obj().Object,
		"quiet", "j", metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"})

	var f burstFigures
	var stop atomic.Bool
	var sent, throttled, quietSent, quietFailed atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			for !stop.Load() {
				sent.Add(1)
				if post(large) == http.StatusTooManyRequests {
					throttled.Add(1)
					time.Sleep(time.Second) // Retry-After: 1
				}
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			quietSent.Add(1)
			if post(quiet) != http.StatusOK {
				quietFailed.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	wg.Go(func() {
		for !stop.Load() {
			heap, err1 := testenv.MetricValue(srv.MetricAddr, "go_memstats_heap_inuse_bytes")
			rss, err2 := testenv.MetricValue(srv.MetricAddr, "process_resident_memory_bytes")
			mu.Lock()
			if err1 == nil {
				f.peakHeap = max(f.peakHeap, heap)
			}
			if err2 == nil {
				f.peakRSS = max(f.peakRSS, rss)
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The burst lasts this long by definition.
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	f.sent, f.throttled, f.quiet, f.quietFailed = sent.Load(), throttled.Load(), quietSent.Load(), quietFailed.Load()
	return f
}

// A tenant's burst of large objects is bounded by the bytes in flight
// (--max-in-flight-mib), not only by their count: the other namespace's small
// requests are never counted against the bytes and keep being answered. The
// figures are reported; the bounds asserted are half the chart's memory limit
// for the heap and that no small request failed.
var _ = Describe("a tenant's burst of large objects", func() {
	It("is held to the byte budget, and another namespace keeps being served", func() {
		limits := map[string]int64{"8 MiB (the chart's default)": 8 << 20, "none": 0}
		for _, name := range []string{"8 MiB (the chart's default)", "none"} {
			budget := limits[name]
			cfg := testenv.ConfigWithoutKueue()
			cfg.InstallProfile = config.ProfileManaged
			cfg.Policies.Directory = GinkgoT().TempDir()
			_, err := testenv.CopyShippedPolicies(cfg.Policies.Directory)
			Expect(err).NotTo(HaveOccurred())
			srv, err := env.StartServerOptions(ctx, env.Config, cfg, func(o *server.Options) {
				o.MaxInFlight, o.MaxInFlightBytes = 256, budget
			})
			Expect(err).NotTo(HaveOccurred())
			f := burst(srv, 10*time.Second)
			// The workers gave up on their last requests (their timeout), which
			// the server still answers: it is stopped once they are, so that the
			// stop's grace period is not spent on a busy machine's backlog.
			const inFlight = "controller_runtime_webhook_requests_in_flight"
			Expect(testenv.MetricSeries(srv.MetricAddr, inFlight)).NotTo(BeEmpty(), "the webhooks' in-flight gauge")
			Eventually(func() (float64, error) {
				return testenv.MetricValue(srv.MetricAddr, inFlight)
			}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(BeZero())
			Expect(srv.Stop()).To(Succeed())
			mib := func(v float64) float64 { return v / (1 << 20) }
			AddReportEntry("burst of large objects, byte budget "+name, fmt.Sprintf(
				"10s of 24 workers sending a %.1f MB JobSet: %d requests, %d answered 429; "+
					"the other namespace: %d requests, %d failed; peak heap in use %.0f MiB, peak RSS %.0f MiB (the whole test process)",
				float64(len(bigJobSet("burst")))/1e6, f.sent, f.throttled, f.quiet, f.quietFailed, mib(f.peakHeap), mib(f.peakRSS)))
			Expect(f.quietFailed).To(BeZero(), "byte budget %s: every small request of the other namespace was answered", name)
			if budget > 0 {
				Expect(f.throttled).To(BeNumerically(">", 0), "the budget refused part of the burst")
				// Heap, not RSS: under -race the race runtime's own memory
				// inflates RSS whatever the server does.
				Expect(f.peakHeap).To(BeNumerically("<", 512<<20), "under the chart's memory limit")
			}
		}
	})
})
