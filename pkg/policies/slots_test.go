package policies

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the evaluation slots", func() {
	// hold takes a slot for key in the background; the slot is held until
	// the returned channel is closed. got is closed once it is held.
	hold := func(s *slots, key string, order chan<- string) (got chan struct{}, done chan struct{}) {
		got, done = make(chan struct{}), make(chan struct{})
		go func() {
			defer GinkgoRecover()
			if !s.acquire(context.Background(), key) {
				return
			}
			if order != nil {
				order <- key
			}
			close(got)
			<-done
			s.release(key)
		}()
		return got, done
	}

	It("keep one slot from a namespace that would take them all", func() {
		s := newSlots(4)
		var dones []chan struct{}
		for range 10 {
			_, done := hold(s, "flood", nil)
			dones = append(dones, done)
		}
		Eventually(s.inUseNow).Should(Equal(3), "the flood holds size-1")
		Consistently(s.inUseNow).WithTimeout(50 * time.Millisecond).Should(Equal(3))
		got, done := hold(s, "quiet", nil)
		Eventually(got).Should(BeClosed(), "the quiet namespace gets the slot the flood may not take")
		close(done)
		for _, d := range dones {
			close(d)
		}
		Eventually(s.inUseNow).Should(BeZero())
	})

	It("hand freed slots round robin to the waiting namespaces, first come first served within each", func() {
		s := newSlots(3) // two per namespace
		Expect(s.take("x")).To(BeNil())
		Expect(s.take("x")).To(BeNil())
		Expect(s.take("y")).To(BeNil())
		var flood, quiet []*slotWaiter
		for range 6 {
			flood = append(flood, s.take("flood"))
		}
		quiet = append(quiet, s.take("quiet"), s.take("quiet"))
		// Free slots one at a time; each grantee gives its slot back before
		// the next is freed, so the grant order is the pool's alone.
		granted := func(ws []*slotWaiter) []int {
			var out []int
			for i, w := range ws {
				select {
				case <-w.granted:
					out = append(out, i)
				default:
				}
			}
			return out
		}
		var order []string
		seen := map[*slotWaiter]bool{}
		// release gives key's slot back; exactly one waiter must take it,
		// and gives it back at once.
		release := func(key string) {
			s.release(key)
			var got []*slotWaiter
			for _, w := range append(append([]*slotWaiter{}, flood...), quiet...) {
				if !seen[w] && len(granted([]*slotWaiter{w})) == 1 {
					got = append(got, w)
				}
			}
			if len(order) == 8 {
				Expect(got).To(BeEmpty())
				return
			}
			Expect(got).To(HaveLen(1), "one slot freed, one waiter served")
			seen[got[0]] = true
			order = append(order, got[0].key)
		}
		release("y")
		for len(order) < 8 {
			release(order[len(order)-1])
		}
		Expect(order[:4]).To(Equal([]string{"flood", "quiet", "flood", "quiet"}), "alternating while both wait: %v", order)
		Expect(granted(flood)).To(Equal([]int{0, 1, 2, 3, 4, 5}), "in arrival order")
		Expect(granted(quiet)).To(Equal([]int{0, 1}))
	})

	It("forget a waiter whose context ends, and give a slot granted as it ended to the next", func() {
		s := newSlots(1)
		_, d := hold(s, "a", nil)
		Eventually(s.inUseNow).Should(Equal(1))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		Expect(s.acquire(ctx, "b")).To(BeFalse())
		s.mu.Lock()
		Expect(s.waiting).To(BeEmpty())
		Expect(s.ring).To(BeEmpty())
		s.mu.Unlock()
		got, d2 := hold(s, "c", nil)
		close(d)
		Eventually(got).Should(BeClosed())
		close(d2)
		Eventually(s.inUseNow).Should(BeZero())
		s.mu.Lock()
		Expect(s.held).To(BeEmpty())
		s.mu.Unlock()
	})

	It("let one namespace use a pool of one", func() {
		s := newSlots(1)
		Expect(s.acquire(context.Background(), "a")).To(BeTrue())
		s.release("a")
		Expect(s.acquire(context.Background(), "a")).To(BeTrue())
		s.release("a")
	})
})

var _ = Describe("background work in the evaluation slots", func() {
	It("holds at most half the slots, and gets a freed slot only when no admission request waits", func() {
		s := newSlots(4)
		for range 2 {
			Expect(s.take(backgroundKey)).To(BeNil())
		}
		w := s.take(backgroundKey)
		Expect(w).NotTo(BeNil(), "half the slots at most")
		Expect(s.take("ml")).To(BeNil())
		Expect(s.take("ml")).To(BeNil())
		adm := s.take("ml")
		Expect(adm).NotTo(BeNil(), "the pool is full")
		s.release(backgroundKey)
		Eventually(adm.granted).Should(BeClosed(), "admission first")
		Consistently(w.granted).WithTimeout(20 * time.Millisecond).ShouldNot(BeClosed())
		s.release("ml")
		Eventually(w.granted).Should(BeClosed(), "then the background work")
	})
})
