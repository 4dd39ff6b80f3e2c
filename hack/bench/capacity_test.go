package main

import (
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
