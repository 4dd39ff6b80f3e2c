package faults

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The limit is set to 1 so that any concurrency passes it. Each refusal costs
// the API server the Retry-After second before it retries, within the
// webhook's timeout: a limit far below the usual concurrency turns a burst
// into timeouts (with the chart's 5s timeout, 16 workers against a limit of 1
// saw one of 160 calls time out), so the default is well above it.
var _ = Describe("a burst beyond the in-flight limit", func() {
	It("is answered 429 and retried by the API server: every request succeeds", func() {
		cfg := testenv.ConfigWithoutKueue()
		cfg.Policies.Directory = GinkgoT().TempDir()
		srv, err := env.StartServerOptions(ctx, env.Config, cfg, func(o *server.Options) { o.MaxInFlight = limit })
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Stop)

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "burst-"}}
		Expect(env.Client.Create(ctx, ns)).To(Succeed())
		restCfg := rest.CopyConfig(env.Config)
		restCfg.QPS, restCfg.Burst = 1000, 1000
		c, err := client.New(restCfg, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		before := throttled(srv)
		const workers, each, maxBursts = 6, 5, 20
		var failed atomic.Int64
		var firstErr atomic.Value
		start := time.Now()
		// Six workers' calls need not overlap at the webhook in one burst
		// (one in CI's runs did not): bursts are sent until one is refused,
		// and every request of every burst must succeed.
		refused, bursts := 0.0, 0
		for ; refused == 0 && bursts < maxBursts; bursts++ {
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					defer GinkgoRecover()
					for i := range each {
						job := fixtures.Job(ns.Name, fmt.Sprintf("j-%d-%d", w, i)).Obj()
						if err := c.Create(ctx, job, client.DryRunAll); err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err.Error())
						}
					}
				})
			}
			wg.Wait()
			refused = throttled(srv) - before
		}
		took := time.Since(start)
		AddReportEntry("burst beyond the in-flight limit", fmt.Sprintf(
			"in-flight limit %d: %d bursts of %d dry-run creates from %d workers through the API server in %v; %.0f webhook calls answered 429 and retried; %d failed %v",
			limit, bursts, workers*each, workers, took.Round(10*time.Millisecond), refused, failed.Load(), firstErr.Load()))
		Expect(failed.Load()).To(BeZero(), "first error: %v", firstErr.Load())
		Expect(refused).To(BeNumerically(">", 0), "the burst went past the limit")
	})
})

// limit is the in-flight limit of the burst spec.
const limit = 1

// throttled reads the server's kueue_guard_admission_throttled_total.
func throttled(srv *testenv.Server) float64 {
	v, err := testenv.MetricValue(srv.MetricAddr, "kueue_guard_admission_throttled_total")
	Expect(err).NotTo(HaveOccurred())
	return v
}
