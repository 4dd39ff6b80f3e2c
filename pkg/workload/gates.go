package workload

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/kueue/pkg/features"
)

// UnreadKueueGates are Kueue feature gates that only make the Kueue code
// kueue-guard calls compute what kueue-guard never reads; they are kept off
// in this process whatever the cluster's Kueue Configuration says (the
// gates kueue-guard follows, cluster.FollowKueueFeatureGates, leave them be).
// SchedulingEquivalenceHashing makes every workload.Info hash its pod sets
// for Kueue's scheduler: about 90 allocations of each summary, a tenth of a
// validated request's (BenchmarkHandler). In Kueue 0.19.2 its only other
// readers are the queue manager (requeueing workloads of one hash together)
// and the Workload controller, neither of which kueue-guard runs: code that
// comes to call them (a simulation of Kueue's queues) must follow the gate.
var UnreadKueueGates = []featuregate.Feature{features.SchedulingEquivalenceHashing}

func init() { TurnOffUnreadKueueGates() }

// TurnOffUnreadKueueGates sets UnreadKueueGates off in the process-wide
// feature gate Kueue's code reads.
func TurnOffUnreadKueueGates() {
	for _, g := range UnreadKueueGates {
		// Only an unknown or locked gate fails: Kueue's own registration
		// (imported above) makes neither possible.
		_ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(g): false})
	}
}
