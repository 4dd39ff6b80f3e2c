package cluster

import (
	"fmt"
	"maps"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

	// Registers Kueue's gates with the process's feature gate.
	_ "sigs.k8s.io/kueue/pkg/features"
)

// KueueFeatureGates makes the Kueue code kueue-guard computes with (its job
// adapters, workload.Info, pod-group naming) run under the feature gates of
// the cluster's Kueue Configuration, as Kueue's own manager does. Kueue reads
// its gates from the process-wide feature gate, so there is one per process:
// a gate the Configuration stops setting goes back to Kueue's default.
type KueueFeatureGates struct {
	mu  sync.Mutex
	set map[string]bool
}

// processGates is the one follower of the process-wide gates, shared by every
// caller (the server, the reviewer), so that two never undo each other.
var processGates KueueFeatureGates

// FollowKueueFeatureGates makes the process's Kueue code run under gates, the
// featureGates of the cluster's Kueue Configuration (nil: Kueue's defaults).
func FollowKueueFeatureGates(gates map[string]bool) error { return processGates.Apply(gates) }

// Apply sets gates (the Configuration's featureGates) and resets the ones a
// previous Apply set that gates no longer names. A gate Kueue does not know,
// or a locked one set against its lock, is an error naming it, as Kueue's
// manager refuses to start with it; the other gates are still applied.
func (k *KueueFeatureGates) Apply(gates map[string]bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if maps.Equal(k.set, gates) {
		return nil
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	want := map[string]bool{}
	for name := range k.set {
		if spec, ok := known[featuregate.Feature(name)]; ok {
			want[name] = spec.Default
		}
	}
	var errs []error
	for name, on := range gates {
		if _, ok := known[featuregate.Feature(name)]; !ok {
			errs = append(errs, fmt.Errorf("unknown feature gate %q", name))
			continue
		}
		want[name] = on
	}
	for name, on := range want {
		if workload.PinnedKueueGate(featuregate.Feature(name)) {
			continue // set by this process (workload.TurnOffUnreadKueueGates)
		}
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{name: on}); err != nil {
			errs = append(errs, err)
		}
	}
	k.set = maps.Clone(gates)
	if len(errs) > 0 {
		return fmt.Errorf("following the featureGates of Kueue's Configuration: %v", errs)
	}
	return nil
}
