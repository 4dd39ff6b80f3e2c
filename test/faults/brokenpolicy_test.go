package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Broken policy sets an admin might roll out: two that compile and fail at
// evaluation (a function with two outputs), on every named object or only on
// what real requests carry, and one that does not compile.
var brokenSets = []struct {
	name, file, source string
}{
	{"fails at evaluation", "conflict.rego", `package acme.conflict

import rego.v1

f(x) := 1 if x != ""

f(x) := 2 if x != ""

deny contains "conflict" if f(input.object.metadata.name) == 1
`},
	// Only what the API server adds to every request fails it: the built-in
	// samples have no managedFields, so only the recent requests the serving
	// set judged, kept with the managedFields the webhook leaves undecoded,
	// show the conflict before the set serves.
	{"fails only on the managedFields the API server writes", "managers.rego", `package acme.managers

import rego.v1

f(x) := 1 if x != ""

f(x) := 2 if x != ""

deny contains "conflict" if {
	some entry in input.object.metadata.managedFields
	f(entry.manager) == 1
}
`},
	{"does not compile", "syntax.rego", `package acme.syntax

deny contains msg if {
	msg := 
}
`},
}

// A broken policy set written into the watched directory while requests flow:
// it is refused and the last good set keeps serving, so no request is denied
// that the good set admits.
var _ = Describe("a broken policy set rolled out under load", func() {
	for _, broken := range brokenSets {
		It("is refused when it "+broken.name+", and no request is wrongly denied", func() {
			srv, dir := shippedPolicyServer(config.ProfileOSS)
			loadErrors := func() float64 {
				v, err := testenv.MetricValue(srv.MetricAddr, "kueue_guard_policy_set_load_errors_total")
				Expect(err).NotTo(HaveOccurred())
				return v
			}
			before := loadErrors()

			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "policy-rollout-"}}
			Expect(env.Client.Create(ctx, ns)).To(Succeed())
			restCfg := rest.CopyConfig(env.Config)
			restCfg.QPS, restCfg.Burst = 1000, 1000
			c, err := client.New(restCfg, client.Options{Scheme: env.Client.Scheme()})
			Expect(err).NotTo(HaveOccurred())

			var sent, failed atomic.Int64
			var firstErr atomic.Value
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 2 {
				wg.Go(func() {
					defer GinkgoRecover()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						job := fixtures.Job(ns.Name, fmt.Sprintf("j-%d-%d", w, i)).Queue("q").
							Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Obj()
						sent.Add(1)
						if err := c.Create(ctx, job, client.DryRunAll); err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err.Error())
						}
					}
				})
			}
			// Let the good set judge some requests first: the new set is tried
			// on them.
			Eventually(sent.Load).WithTimeout(10 * time.Second).Should(BeNumerically(">", 50))
			start := time.Now()
			Expect(os.WriteFile(filepath.Join(dir, broken.file), []byte(broken.source), 0o644)).To(Succeed())
			Eventually(loadErrors).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(BeNumerically(">", before))
			refusedAfter := time.Since(start)
			atRefusal := sent.Load()
			// Keep the load on after the refusal: the last good set serves it.
			Eventually(sent.Load).WithTimeout(10 * time.Second).Should(BeNumerically(">", atRefusal+100))
			close(stop)
			wg.Wait()

			AddReportEntry("broken policy set under load: "+broken.name, fmt.Sprintf(
				"refused %v after it was written; %d dry-run creates through the API server, %d of them after the refusal; %d failed %v",
				refusedAfter.Round(10*time.Millisecond), sent.Load(), sent.Load()-atRefusal, failed.Load(), firstErr.Load()))
			Expect(failed.Load()).To(BeZero(), "first error: %v", firstErr.Load())
		})
	}
})
