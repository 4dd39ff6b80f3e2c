package review

import (
	"fmt"
	"strings"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
)

// followKueue makes Kueue's code run under the feature gates of the cluster
// state's Kueue Configuration, as the webhook does, and returns the notes that
// say which Kueue the review computes as: always where a gate cannot be
// followed, and with --explain the running Kueue's release and gates.
func (r *reviewer) followKueue() []string {
	var notes []string
	cfg, ok := r.state.Snapshot.KueueConfig()
	gates := "Kueue's defaults"
	if ok {
		if err := cluster.FollowKueueFeatureGates(cfg.FeatureGates); err != nil {
			notes = append(notes, err.Error()+": Kueue's manager would not start with them; the review uses the others")
		}
		if len(cfg.FeatureGates) > 0 {
			gates = kueuecontroller.FormatFeatureGates(cfg.FeatureGates)
		}
	} else if err := cluster.FollowKueueFeatureGates(nil); err != nil {
		notes = append(notes, err.Error())
	}
	if !r.opts.Explain {
		return notes
	}
	managers := r.state.Snapshot.KueueControllers()
	if len(managers) == 0 {
		return append(notes, fmt.Sprintf("Kueue: what Kueue charges is computed with Kueue %s's code, feature gates: %s",
			kueuecontroller.TestedVersion, gates))
	}
	for _, m := range managers {
		note := fmt.Sprintf("Kueue: %s runs %s; what Kueue charges is computed with Kueue %s's code, feature gates: %s",
			m.String(), orUnknown(m.Version), kueuecontroller.TestedVersion, gates)
		if s := kueuecontroller.Assess(m.Version); !s.Tested && s.Version != "" {
			note += fmt.Sprintf("; known differences of %s: %s", s.Minor, strings.Join(s.Differences, "; "))
		}
		notes = append(notes, note)
	}
	return notes
}

func orUnknown(version string) string {
	if version == "" {
		return "an unnamed release"
	}
	return version
}
