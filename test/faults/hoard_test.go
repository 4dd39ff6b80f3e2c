package faults

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// hoardedDeployment is one of a tenant's many unqueued Deployments, of no
// replicas, whose container carries argBytes of arguments.
func hoardedDeployment(ns string, i, argBytes int) *appsv1.Deployment {
	labels := map[string]string{"app": fmt.Sprintf("hoard-%d", i)}
	args := make([]string, argBytes>>10)
	for j := range args {
		args[j] = fmt.Sprintf("--opt-%d=%s", j, strings.Repeat("x", 1<<10-16))
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("hoard-%d", i)},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", Args: args}}}}}}
}

// heapInUse is the test process's heap in use after a collection: the
// servers run in it.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A tenant's thousands of large Deployments cost kueue-guard's cache what the
// Kueue controller check reads of them (their --config arguments), not their
// size: the cache keeps every Deployment of the cluster. The figures are
// reported; the bounds asserted are 60% of the arguments' bytes for what the
// cache retains (keeping the arguments would retain more than all of them),
// and half the chart's memory limit for the peak.
var _ = Describe("a tenant's thousands of large Deployments", func() {
	It("cost the cache only what it reads of them, and another namespace keeps being served", func() {
		const n, argBytes = 1500, 24 << 10
		c, _, hoard := warnedClient("hoard-")
		fast := rest.CopyConfig(env.Config)
		fast.QPS, fast.Burst = 1000, 1000
		creator, err := client.New(fast, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(env.Client.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(hoard))).To(Succeed())
		})

		// A server without the Deployments, for the heap it holds.
		before, _ := shippedPolicyServer(config.ProfileManaged)
		base := heapInUse()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := next.Add(1); i <= n; i = next.Add(1) {
					Expect(creator.Create(ctx, hoardedDeployment(hoard, int(i), argBytes))).To(Succeed())
				}
			})
		}
		wg.Wait()
		Expect(before.Stop()).To(Succeed())

		// A server that starts with them: its informer lists them all.
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}
		}()
		shippedPolicyServer(config.ProfileManaged)
		close(done)
		retained := int64(heapInUse()) - int64(base)

		other, _, otherNS := warnedClient("quiet-")
		quiet := fixtures.Job(otherNS, "quiet").Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Obj()
		Expect(other.Create(ctx, quiet, client.DryRunAll)).To(Succeed(), "another namespace is served")
		Expect(c.Create(ctx, hoardedDeployment(hoard, 0, 1<<10), client.DryRunAll)).To(Succeed(), "so is the tenant's")

		mib := func(v float64) float64 { return v / (1 << 20) }
		data := float64(n * argBytes)
		AddReportEntry("a tenant's large Deployments", fmt.Sprintf(
			"%d Deployments of %.0f KiB of arguments (%.0f MiB): the cache retains %.1f MiB more than without them; "+
				"peak heap in use while the server started and listed them %.0f MiB (the whole test process)",
			n, float64(argBytes)/1024, mib(data), mib(float64(retained)), mib(float64(peak.Load()))))
		Expect(float64(retained)).To(BeNumerically("<", 0.6*data), "the cache keeps what it reads, not the arguments")
		Expect(peak.Load()).To(BeNumerically("<", uint64(512<<20)), "under the chart's memory limit")
	})
})
