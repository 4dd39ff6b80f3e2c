package policies

import "time"

// SlotsInUse lets tests wait until an evaluation holds a concurrency slot.
func (e *Engine) SlotsInUse() int { return e.slots.inUseNow() }

// SetMaxSubsets lowers the subset-query cache bound for a test; it returns the
// function that restores it.
func SetMaxSubsets(n int) (restore func()) {
	old := maxSubsets
	maxSubsets = n
	return func() { maxSubsets = old }
}

// CanarySampleKinds lists the kinds of the canary's samples.
func CanarySampleKinds() ([]string, error) {
	samples, err := canarySamples()
	var out []string
	for _, c := range samples {
		out = append(out, c.sub.Kind.String())
	}
	return out, err
}

// UseOPARuleCache makes the engine evaluate with OPA's own rule cache, for a
// reference to compare refCache's evaluations with.
func UseOPARuleCache(e *Engine) { e.opaCache = true }

// SetCanaryEvery sets the least time between two requests the canary ring
// keeps; it returns the function that restores it.
func SetCanaryEvery(d time.Duration) (restore func()) {
	old := canaryEvery
	canaryEvery = d
	return func() { canaryEvery = old }
}

// RecentInputs is how many requests the canary ring holds.
func RecentInputs(e *Engine) int { return len(e.recent.inputs()) }
