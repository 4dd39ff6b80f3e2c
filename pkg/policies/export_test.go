package policies

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
