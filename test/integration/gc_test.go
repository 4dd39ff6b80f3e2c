package integration

import (
	"runtime"
	"runtime/metrics"

	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The server paces Go's collector for a headroom above its live heap once it
// is ready (--gc-headroom-mib), as its metrics show, and leaves Go's pace to
// the rest of the process when it stops. (The server runs in this process:
// its runtime metrics are this process's.)
var _ = Describe("the garbage collector's headroom", func() {
	It("is set once the server is ready, shown in its Go metrics, and removed when it stops", func() {
		const headroom = 1 << 30
		s := extraServer(func(o *server.Options) { o.GCHeadroom = headroom })

		Eventually(func(g Gomega) {
			runtime.GC() // the pace follows each cycle
			gogc, err := testenv.MetricValue(s.MetricAddr, "go_gc_gogc_percent")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gogc).To(BeNumerically(">", 100))
			goal, err := testenv.MetricValue(s.MetricAddr, "go_gc_heap_goal_bytes")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(goal).To(BeNumerically(">=", headroom))
		}).Should(Succeed())

		Expect(s.Stop()).To(Succeed())
		runtime.GC()
		sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(sample)
		Expect(sample[0].Value.Uint64()).To(BeEquivalentTo(100), "Go's default pace again")
	})
})
