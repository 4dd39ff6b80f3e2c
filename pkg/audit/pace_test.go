package audit

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the pacer", func() {
	It("holds a tenth of a core, or what the last run needs to end within half an interval", func() {
		Expect(newPacer(0, time.Minute).share).To(Equal(minShare), "no run yet")
		Expect(newPacer(3*time.Second, time.Minute).share).To(Equal(minShare), "3 s of work fits in 30 s at a tenth")
		Expect(newPacer(15*time.Second, time.Minute).share).To(Equal(0.5))
		Expect(newPacer(45*time.Second, time.Minute).share).To(Equal(1.0), "never more than one core")
	})

	It("rests after each slice of work in proportion to its share, and not with a whole core", func() {
		p := newPacer(15*time.Second, time.Minute) // a half share
		step := paceSlice / 4
		for range 3 {
			Expect(p.did(context.Background(), step)).To(Succeed())
		}
		Expect(p.Rested).To(BeZero(), "less than a slice of work")
		Expect(p.did(context.Background(), 3*step)).To(Succeed())
		Expect(p.Rested).To(BeNumerically(">=", 6*step), "as long as the work, at a half share")
		Expect(p.Busy).To(Equal(6 * step))

		whole := newPacer(time.Minute, time.Minute)
		Expect(whole.did(context.Background(), time.Second)).To(Succeed())
		Expect(whole.Rested).To(BeZero())
	})

	It("stops resting half an interval into a run, so that a first run over a large cluster still ends in time", func() {
		p := newPacer(0, 20*time.Millisecond)
		time.Sleep(15 * time.Millisecond)
		Expect(p.did(context.Background(), paceSlice)).To(Succeed())
		Expect(p.Rested).To(BeZero())
	})

	It("counts the work of judging and of the pager's goroutine reported at once", func() {
		p := newPacer(time.Minute, time.Minute) // a whole core: no rest
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for range 100 {
					Expect(p.did(context.Background(), time.Microsecond)).To(Succeed())
				}
			})
		}
		wg.Wait()
		busy, rested := p.totals()
		Expect(busy).To(Equal(200 * time.Microsecond))
		Expect(rested).To(BeZero())
	})

	It("stops resting when the run's context ends", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		Expect(newPacer(0, time.Minute).did(ctx, time.Second)).To(MatchError(context.Canceled))
	})
})
