package server

import (
	"math"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultGCHeadroom is the heap the garbage collector lets a serving replica
// allocate between two cycles at the least (--gc-headroom-mib).
const DefaultGCHeadroom = 64 << 20

// baseGCPercent is Go's default GOGC: a cycle once the heap has grown by what
// the last one left live.
const baseGCPercent = 100

// The GC headroom: with Go's default GOGC a cycle runs each time the heap grows
// by what the last one left live. A webhook's live heap is small (its caches,
// the compiled policies: tens of MiB) and every request allocates (decoding,
// the policy input, OPA's evaluation), so it would mark its whole heap every
// few hundred requests: on make bench's policy-evaluating streams the
// collector took about 12 % of the server's CPU, 2 % with a 128 MiB headroom,
// which answered 13–19 % more requests (and fewer goroutines waited 10 ms or
// more to run). The default is 64 MiB (0–7 % more): 128 MiB also raised the
// resident set of a replica caching a large cluster (10,000 namespaces and
// queues) by a quarter, whose live heap 64 MiB does not exceed. The headroom
// raises GOGC after each cycle so that the next runs no sooner than headroom
// bytes later: the target is live + max(live, headroom),
// unchanged once the live heap outgrows the headroom (a large cluster's
// caches). The soft memory limit (SetMemoryLimit) still bounds the heap: near
// it the collector runs as often as it must. Libraries that tune GOGC
// (ByteDance's gctuner) steer toward a memory ceiling, which GOMEMLIMIT now
// does; this is the floor they do not give.
var gcTuner struct {
	mu       sync.Mutex
	users    int   // StartGCHeadroom calls not yet stopped
	headroom int64 // the latest caller's
	percent  int   // last set
	// gen counts the starts from no user: a hook armed before the last stop
	// finds it changed and ends, so that a stop and a start between two
	// cycles never leave two hooks running.
	gen   uint64
	armed int // hooks waiting for a cycle
}

// StartGCHeadroom keeps at least headroom bytes between the heap a cycle
// leaves live and the next cycle's target, until stop is called; it does
// nothing (and stop is a no-op) for headroom ≤ 0 or when GOGC is set (the
// operator chose the collector's pace). Servers in one process share the
// tuning, with the latest headroom; the last stop restores Go's default.
func StartGCHeadroom(headroom int64) (stop func(), started bool) {
	if headroom <= 0 || os.Getenv("GOGC") != "" {
		return func() {}, false
	}
	gcTuner.mu.Lock()
	defer gcTuner.mu.Unlock()
	gcTuner.users++
	gcTuner.headroom = headroom
	if gcTuner.users == 1 {
		gcTuner.percent = baseGCPercent
		gcTuner.gen++
		armGCHook(gcTuner.gen)
	}
	retuneLocked()
	var once sync.Once
	return func() { once.Do(stopGCHeadroom) }, true
}

func stopGCHeadroom() {
	gcTuner.mu.Lock()
	defer gcTuner.mu.Unlock()
	if gcTuner.users--; gcTuner.users == 0 {
		debug.SetGCPercent(baseGCPercent)
		gcTuner.percent = baseGCPercent
	}
}

// gcSentinel is garbage from the moment it is made: its cleanup runs after
// the cycle that finds it, and makes the next one. Large enough not to share
// a tiny-allocator block, whose cleanups may never run.
type gcSentinel [64]byte

// armGCHook runs under gcTuner.mu.
func armGCHook(gen uint64) {
	gcTuner.armed++
	runtime.AddCleanup(new(gcSentinel), func(gen uint64) {
		gcTuner.mu.Lock()
		defer gcTuner.mu.Unlock()
		gcTuner.armed--
		if gcTuner.users > 0 && gen == gcTuner.gen {
			retuneLocked()
			armGCHook(gen)
		}
	}, gen)
}

// retuneLocked sets GOGC from the live heap the last cycle marked.
func retuneLocked() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercent(sample[0].Value.Uint64(), uint64(gcTuner.headroom)); p != gcTuner.percent {
		debug.SetGCPercent(p)
		gcTuner.percent = p
	}
}

// minLiveHeap stands in for a live heap not measured yet (before the first
// cycle), so that the percent stays finite.
const minLiveHeap = 4 << 20

// gcPercent is the GOGC that puts the next cycle's target at
// live + max(live, headroom), rounded up.
func gcPercent(live, headroom uint64) int {
	live = max(live, minLiveHeap)
	if headroom <= live {
		return baseGCPercent
	}
	hi, lo := bits.Mul64(headroom, 100)
	if hi >= live { // a quotient past 64 bits
		return math.MaxInt32
	}
	p, rem := bits.Div64(hi, lo, live)
	if rem > 0 {
		p++
	}
	return int(min(p, math.MaxInt32))
}
