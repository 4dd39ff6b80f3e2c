package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/google/go-cmp/cmp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("an open-loop point's capacity", func() {
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`)

	// pointAt is an open-loop point of the floor endpoint at the server h.
	pointAt := func(h http.HandlerFunc) openPoint {
		ts := httptest.NewTLSServer(h)
		DeferCleanup(ts.Close)
		ep := &endpoint{Name: epFloor, Label: "floor", path: "/", srv: &server{Name: "floor", base: ts.URL}}
		return openPoint{ep: ep, body: &body{Name: "Job CREATE", Review: review}, fraction: 0.5}
	}
	benchWith := func(window time.Duration) *bench {
		return &bench{o: &options{matrixConcurrency: 2, openCapacity: window}}
	}

	It("is the rate the target answers in a closed loop just before the point", func(ctx context.Context) {
		op := pointAt(floorHandler)
		// A matrix rate below what one answer in the window makes: the
		// capacity is measured, not taken from the closed loop.
		got, err := benchWith(200*time.Millisecond).capacity(ctx, op, 0.5)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(BeNumerically(">", 0.5))
	})

	It("is the closed-loop point's rate without a window", func(ctx context.Context) {
		got, err := benchWith(0).capacity(ctx, pointAt(floorHandler), 1234)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(1234.0))
	})

	It("fails the run when the target answers nothing in the window", func(ctx context.Context) {
		op := pointAt(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		_, err := benchWith(100*time.Millisecond).capacity(ctx, op, 1234)
		Expect(err).To(MatchError(ContainSubstring("floor answered no Job CREATE in 100ms")))
	})
})

var _ = Describe("an open-loop point's garbage collection", func() {
	DescribeTable("is what the server's counters moved by, or nothing without them",
		func(before, after *gcCounters, want *gcDelta, cell string) {
			got := after.minus(before)
			if d := cmp.Diff(want, got); d != "" {
				Fail(d)
			}
			Expect(gcCell(got)).To(Equal(cell))
		},
		Entry("a server with metrics", &gcCounters{cycles: 10, cpuSeconds: 1.5},
			&gcCounters{cycles: 17, cpuSeconds: 1.585}, &gcDelta{Cycles: 7, CPU: 85 * time.Millisecond}, "7 (85)"),
		Entry("a server without", nil, nil, nil, "–"),
	)
})

var _ = Describe("an open-loop point's tail beside the collector's cycles", func() {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	DescribeTable("a gctrace line is one cycle's window from the child's start",
		func(line string, want gcWindow, ok bool) {
			got, gotOK := parseGCTrace([]byte(line), t0)
			Expect(gotOK).To(Equal(ok))
			if d := cmp.Diff(want, got, cmp.AllowUnexported(gcWindow{})); d != "" {
				Fail(d)
			}
		},
		Entry("a cycle", "gc 12 @1.500s 3%: 0.020+40+0.080 ms clock, 0.040+1.2/20/15+0.16 ms cpu, 60->61->30 MB, 99 MB goal, 0 MB stacks, 0 MB globals, 2 P",
			gcWindow{n: 12, start: at(1500), end: at(1540).Add(100 * time.Microsecond)}, true),
		Entry("a cycle checking for goroutine leaks", "gc 3 @0.250s 1% (checking for goroutine leaks): 1+2+3 ms clock, 1+1/1/1+1 ms cpu",
			gcWindow{n: 3, start: at(250), end: at(256)}, true),
		Entry("a forced cycle's line is one too", "gc 4 @2.000s 2%: 0+1+0 ms clock, 0+0/0/0+0 ms cpu, 1->1->1 MB, 4 MB goal, 2 P (forced)",
			gcWindow{n: 4, start: at(2000), end: at(2001)}, true),
		Entry("a log line", `{"level":"info","msg":"gc 1 @ nothing"}`, gcWindow{}, false),
		Entry("a scavenger line", "scvg: 1 MB released", gcWindow{}, false),
	)

	It("keeps the cycles of the lines written, split across writes, and passes every byte on", func() {
		var log bytes.Buffer
		tr := newGCTrace(&log, t0)
		in := "starting\ngc 1 @0.100s 0%: 1+10+1 ms clock, x\ngc 2 @0.5"
		rest := "00s 0%: 1+20+1 ms clock, x\nready\n"
		for _, p := range []string{in, rest} {
			n, err := tr.Write([]byte(p))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(len(p)))
		}
		Expect(log.String()).To(Equal(in + rest))
		Expect(tr.between(at(0), at(1000))).To(HaveLen(2))
		Expect(tr.between(at(200), at(400))).To(BeEmpty())
		Expect(tr.between(at(505), at(506))).To(Equal([]gcWindow{{n: 2, start: at(500), end: at(522)}}))

		By("calibrated by cycle 2's end as the child reports it, 30 ms later than its trace says")
		Expect(tr.calibrate(3, at(600))).To(BeFalse(), "a cycle not yet traced")
		Expect(tr.calibrate(2, at(552))).To(BeTrue())
		Expect(tr.between(at(505), at(506))).To(BeEmpty())
		Expect(tr.between(at(535), at(536))).To(Equal([]gcWindow{{n: 2, start: at(530), end: at(552)}}))
	})

	DescribeTable("counts the requests at or above the p99 that were in flight during a cycle",
		func(sent []int, lat []int, p99 int, cycles []gcWindow, want tailInGC) {
			s, l := make([]time.Time, len(sent)), make([]time.Duration, len(lat))
			for i := range sent {
				s[i], l[i] = at(sent[i]), time.Duration(lat[i])*time.Millisecond
			}
			got := tailOverlap(s, l, time.Duration(p99)*time.Millisecond, cycles)
			Expect(got.InCycles).To(Equal(want.InCycles))
			Expect(got.Tail).To(Equal(want.Tail))
			Expect(got.TimeShare).To(BeNumerically("~", want.TimeShare, 1e-9))
		},
		// Requests over [0, 1000] ms; a cycle of 98 ms, 100 ms with its slack.
		Entry("a slow request during the cycle, one outside it, fast ones during it",
			[]int{0, 100, 500, 510, 900}, []int{1, 50, 1, 1, 100}, 50,
			[]gcWindow{{start: at(501), end: at(599)}}, tailInGC{InCycles: 0, Tail: 2, TimeShare: 0.1}),
		Entry("a slow request that began before the cycle and waited into it",
			[]int{0, 450, 900}, []int{1, 52, 100}, 50,
			[]gcWindow{{start: at(501), end: at(599)}}, tailInGC{InCycles: 1, Tail: 2, TimeShare: 0.1}),
		Entry("no cycle", []int{0, 10}, []int{1, 990}, 990, nil, tailInGC{InCycles: 0, Tail: 1, TimeShare: 0}),
		Entry("a cycle covering more than the point", []int{0}, []int{10}, 10,
			[]gcWindow{{start: at(-100), end: at(100)}}, tailInGC{InCycles: 1, Tail: 1, TimeShare: 1}),
	)
})
