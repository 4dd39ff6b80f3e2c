package workload

// Grows reports whether an update asks Kueue for more than before: a pod set
// with more pods, a larger total request of any resource, a pod set or a
// resource that was not there, or a request that was removed. A removed request
// counts because it lowers what Kueue charges while the pods may then use
// more (a BestEffort pod is charged nothing), so it must be judged like a
// larger one. Updates that only shrink or leave the sizes alone (Kueue
// unsuspending a job, injecting node selectors, partial admission lowering
// parallelism) do not grow the workload.
func Grows(old, new *Summary) bool {
	if old == nil || new == nil {
		return new != nil
	}
	oldSets := make(map[string]PodSet, len(old.PodSets))
	for _, ps := range old.PodSets {
		oldSets[ps.Name] = ps
	}
	for _, ps := range new.PodSets {
		was, ok := oldSets[ps.Name]
		if !ok || ps.Count > was.Count {
			return true
		}
		for name, q := range ps.Requests {
			if wq, ok := was.Requests[name]; !ok || q.Cmp(wq) > 0 {
				return true
			}
		}
		for name := range was.Requests {
			if _, ok := ps.Requests[name]; !ok {
				return true
			}
		}
	}
	for name, q := range new.TotalRequests {
		if wq, ok := old.TotalRequests[name]; !ok || q.Cmp(wq) > 0 {
			return true
		}
	}
	return false
}
