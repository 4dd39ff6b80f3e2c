package workload

import (
	"slices"

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
// and the Workload controller, neither of which kueue-guard runs (the
// simulation, pkg/schedsim, calls Kueue's flavor assigner and preemptor, not
// its queue manager).
var UnreadKueueGates = []featuregate.Feature{features.SchedulingEquivalenceHashing}

// WordingKueueGates are Kueue feature gates kept on in this process whatever
// the cluster's Configuration says, because they only change Kueue's words:
// UnadmittedWorkloadsObservability makes the flavor assigner name why a
// workload does not fit (WaitingForQuota, ExceedsMaxQuota, NoMatchingFlavor),
// the vocabulary simulate reports. Its other effects (metrics, the reason on
// a Workload's condition) belong to Kueue code kueue-guard does not run.
var WordingKueueGates = []featuregate.Feature{features.UnadmittedWorkloadsObservability}

func init() { TurnOffUnreadKueueGates() }

// TurnOffUnreadKueueGates sets UnreadKueueGates off, and WordingKueueGates
// on, in the process-wide feature gate Kueue's code reads.
func TurnOffUnreadKueueGates() {
	// Only an unknown or locked gate fails: Kueue's own registration
	// (imported above) makes neither possible.
	for _, g := range UnreadKueueGates {
		_ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(g): false})
	}
	for _, g := range WordingKueueGates {
		_ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(g): true})
	}
}

// PinnedKueueGate reports a gate this process sets itself (UnreadKueueGates,
// WordingKueueGates), which the cluster's Configuration does not change.
func PinnedKueueGate(g featuregate.Feature) bool {
	return slices.Contains(UnreadKueueGates, g) || slices.Contains(WordingKueueGates, g)
}
