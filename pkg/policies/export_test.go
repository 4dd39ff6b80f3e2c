package policies

// SlotsInUse lets tests wait until an evaluation holds a concurrency slot.
func (e *Engine) SlotsInUse() int { return len(e.sem) }
