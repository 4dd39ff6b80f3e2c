package preflight

import (
	"fmt"
	"strings"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
)

// checkKueueVersion names the Kueue each manager runs and the feature gates
// its Configuration sets, and warns where the minor is not the one
// kueue-guard computes with, naming what is known to differ.
func checkKueueVersion(_ Target, s *State) Check {
	tested := kueuecontroller.TestedVersion
	c := Check{ID: CheckKueueVersion, Title: "Kueue version",
		Why: "kueue-guard computes what Kueue charges with Kueue " + tested + "'s own code, and its tests run that manager: " +
			"another minor may charge, hold or validate workloads differently."}
	if s.ManagersErr != nil {
		return errorCheck(c, "the workloads that could run Kueue", s.ManagersErr)
	}
	for i := range s.Managers {
		m := &s.Managers[i]
		sup := kueuecontroller.Assess(m.Version)
		gates := "Kueue's defaults"
		if kc := configOf(s, m); kc != nil && len(kc.FeatureGates) > 0 {
			gates = kueuecontroller.FormatFeatureGates(kc.FeatureGates) + ", Kueue's defaults otherwise"
		}
		f := Finding{Status: Pass, Object: m.Identity.String()}
		switch {
		case sup.Tested:
			f.Message = fmt.Sprintf("Kueue %s, the minor kueue-guard is tested against; feature gates: %s", m.Version, gates)
		case sup.Version == "":
			f.Status = Warn
			f.Message = fmt.Sprintf("names no Kueue release (image %q, no %s label); feature gates: %s",
				m.Image, "app.kubernetes.io/version", gates)
			f.Fix = "run an image tagged with its release, or label the Deployment app.kubernetes.io/version=<release>, so that it can be compared with " + tested
		default:
			f.Status = Warn
			f.Message = fmt.Sprintf("Kueue %s; kueue-guard is tested against %s; feature gates: %s; known differences: %s",
				m.Version, tested, gates, strings.Join(sup.Differences, "; "))
			f.Fix = "run Kueue " + kueuecontroller.Minor(tested) + " (the managed extension's 0.19.x, or upstream " + tested + "), or a kueue-guard release tested against " + sup.Minor
		}
		c.add(f)
	}
	if c.Status == "" {
		c.Status = Pass
	}
	switch {
	case len(s.Managers) == 0:
		c.Summary = "no Kueue controller manager runs; kueue-guard is tested against Kueue " + tested
	case c.Status == Pass:
		c.Summary = fmt.Sprintf("every Kueue controller manager runs %s, the minor kueue-guard is tested against", kueuecontroller.Minor(tested))
	default:
		c.Summary = "a Kueue controller manager runs a release other than " + kueuecontroller.Minor(tested) + ", or names none"
	}
	return c
}

// configOf is the Configuration a manager mounts, if it was read.
func configOf(s *State, m *Manager) *KueueConfiguration {
	for i := range s.KueueConfigs {
		if s.KueueConfigs[i].Manager == m.Identity && s.KueueConfigs[i].Err == nil && !s.KueueConfigs[i].NotFound {
			return &s.KueueConfigs[i]
		}
	}
	return nil
}
