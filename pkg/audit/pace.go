package audit

import (
	"context"
	"sync"
	"time"
)

// The audit's pace: it works in slices and rests between them, so that it
// holds at most a share of one core and admission, on the same cores, keeps
// its latency. The share is minShare, or more when the last run's work would
// not fit in half an interval at it; and a run still going after half an
// interval (the first run over a large cluster) stops resting: a large cluster
// is audited faster, never cut.
const (
	// minShare is the audit's least share of one core: measured by make
	// bench on two cores, a fifth of a core still raised admission's p99 1.9×
	// during a run, a tenth 1.2×.
	minShare = 0.1
	// paceSlice is how much work is done between two rests.
	paceSlice = time.Millisecond
)

// pacer rests in proportion to the work done: after each paceSlice of work,
// slice × (1-share)/share. Judging and listing (the pager's goroutine) both
// tell it their work; one resting holds the other back, so that together
// they keep to the share.
type pacer struct {
	mu    sync.Mutex
	share float64
	// restUntil is when the run stops resting (half an interval in).
	restUntil time.Time
	// work is the work since the last rest; Busy and Rested the run's totals.
	work, Busy, Rested time.Duration
}

// newPacer paces a run: lastBusy is the work of the last run (0 for none), the
// run must end within interval.
func newPacer(lastBusy, interval time.Duration) *pacer {
	share := minShare
	if interval > 0 && lastBusy > 0 {
		share = max(share, float64(lastBusy)/float64(interval/2))
	}
	p := &pacer{share: min(share, 1)}
	if interval > 0 {
		p.restUntil = time.Now().Add(interval / 2)
	}
	return p
}

// did records work that took d and rests when a slice is done; it returns
// ctx's error when ctx ends while resting.
func (p *pacer) did(ctx context.Context, d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.work += d
	p.Busy += d
	if p.work < paceSlice || p.share >= 1 || (!p.restUntil.IsZero() && time.Now().After(p.restUntil)) {
		return nil
	}
	rest := time.Duration(float64(p.work) * (1 - p.share) / p.share)
	p.work = 0
	t := time.NewTimer(rest)
	defer t.Stop()
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	p.Rested += time.Since(start)
	return nil
}

// totals are the run's work and rest so far.
func (p *pacer) totals() (busy, rested time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Busy, p.Rested
}
