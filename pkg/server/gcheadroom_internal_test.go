package server

import (
	"os"
	"runtime"
	"runtime/metrics"

	"github.com/google/go-cmp/cmp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// readGC reads one of the runtime's GC figures ("/gc/gogc:percent",
// "/gc/heap/goal:bytes", ...).
func readGC(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var _ = Describe("the GC headroom", func() {
	const mib = 1 << 20

	It("puts the next cycle at live + max(live, headroom)", func() {
		cases := []struct {
			name           string
			live, headroom uint64
			want           int
		}{
			{"a heap larger than the headroom keeps Go's pace", 512 * mib, 128 * mib, 100},
			{"a heap as large as the headroom too", 128 * mib, 128 * mib, 100},
			{"a small heap waits for the headroom", 32 * mib, 128 * mib, 400},
			{"rounded up, never short of it", 48 * mib, 128 * mib, 267},
			{"a heap not measured yet counts as 4 MiB", 0, 128 * mib, 3200},
			{"a huge headroom stays a valid percent", 4 * mib, 1 << 62, 1<<31 - 1},
		}
		got, want := map[string]int{}, map[string]int{}
		for _, c := range cases {
			got[c.name], want[c.name] = gcPercent(c.live, c.headroom), c.want
		}
		Expect(cmp.Diff(want, got)).To(BeEmpty())
	})

	// Each spec leaves the collector at Go's pace: the others measure it.
	AfterEach(func() { Expect(readGC("/gc/gogc:percent")).To(BeEquivalentTo(baseGCPercent)) })

	It("raises the target above the live heap after every cycle, and follows the live heap as it grows", func() {
		const headroom = 1 << 30
		stop, started := StartGCHeadroom(headroom)
		Expect(started).To(BeTrue())
		defer stop()
		// The hook runs after a cycle, on the runtime's cleanup goroutine.
		Eventually(func() uint64 { runtime.GC(); return readGC("/gc/heap/goal:bytes") }).Should(BeNumerically(">=", headroom))
		small := readGC("/gc/gogc:percent")
		Expect(small).To(BeNumerically(">", baseGCPercent))

		held := make([]byte, 256*mib) // a live heap several times larger
		for i := range held {
			held[i] = byte(i)
		}
		Eventually(func() uint64 { runtime.GC(); return readGC("/gc/gogc:percent") }).Should(BeNumerically("<", small))
		Expect(readGC("/gc/heap/goal:bytes")).To(BeNumerically(">=", headroom))
		runtime.KeepAlive(held)
	})

	It("is shared by the servers of a process: the last to stop restores Go's pace", func() {
		stopA, _ := StartGCHeadroom(1 << 30)
		stopB, _ := StartGCHeadroom(1 << 30)
		Eventually(func() uint64 { runtime.GC(); return readGC("/gc/gogc:percent") }).Should(BeNumerically(">", baseGCPercent))
		stopA()
		stopA() // a second stop of one server changes nothing
		runtime.GC()
		Expect(readGC("/gc/gogc:percent")).To(BeNumerically(">", baseGCPercent))
		stopB()
		runtime.GC()
		Expect(readGC("/gc/gogc:percent")).To(BeEquivalentTo(baseGCPercent))
	})

	It("keeps one hook when a server stops and another starts between two cycles", func() {
		armed := func() int {
			runtime.GC()
			gcTuner.mu.Lock()
			defer gcTuner.mu.Unlock()
			return gcTuner.armed
		}
		stop, _ := StartGCHeadroom(1 << 30)
		stop()
		stop, _ = StartGCHeadroom(1 << 30)
		defer stop()
		Eventually(armed).Should(Equal(1))
		Consistently(armed, "300ms", "50ms").Should(Equal(1))
	})

	It("leaves the pace to GOGC when it is set, and to Go without a headroom", func() {
		Expect(os.Setenv("GOGC", "100")).To(Succeed())
		DeferCleanup(os.Unsetenv, "GOGC")
		stop, started := StartGCHeadroom(1 << 30)
		stop()
		Expect(started).To(BeFalse())
		Expect(os.Unsetenv("GOGC")).To(Succeed())
		stop, started = StartGCHeadroom(0)
		stop()
		Expect(started).To(BeFalse())
		runtime.GC()
	})
})
