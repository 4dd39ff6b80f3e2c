package kueuecontroller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Support is what kueue-guard knows of a Kueue release next to TestedVersion:
// whether its arithmetic, markers and webhooks are the ones kueue-guard's
// tests run against, and what is known to differ where they are not.
type Support struct {
	// Version is the release found ("" when the manager names none).
	Version string
	// Minor is its "v0.19" ("" when unknown).
	Minor string
	// Tested reports the same minor as TestedVersion.
	Tested bool
	// Differences are the differences known between Minor and the tested
	// minor that change what kueue-guard computes or guards; empty for the
	// tested minor and for an unknown version.
	Differences []string
}

// changes are what Kueue changed, by the minor that changed it, in what
// kueue-guard computes or guards. A minor differs from the tested one by every
// change made after the older of the two, up to the newer.
var changes = []struct {
	since       string
	differences []string
}{
	{since: "v0.18", differences: []string{
		"pod-level resources (spec.resources) and a Pod LimitRange's defaults for them are charged from 0.18",
		"the Redis-cleanup job of a GCS fault-tolerant Ray cluster is charged from 0.18",
		"elastic Jobs (ElasticJobsViaWorkloadSlices) and DRA resource claims (KueueDRAIntegration) are on by default from 0.18",
		"a pod group named by annotation (WorkloadIdentifierAnnotations), and one whose pods' owners differ refused (PodIntegrationValidateGroupOwner), from 0.18",
	}},
	{since: "v0.19", differences: []string{
		"the head's in-tree autoscaler sidecar of a Ray cluster is charged from 0.19 (500m CPU and 512Mi per head)",
		"requests and quotas saturate from 0.19 (a quota of 1E CPU is unlimited, not 0)",
	}},
	{since: "v0.20", differences: []string{
		"kueue.x-k8s.io/v1beta1 is no longer served: kueue-guard reads v1beta2 and is unaffected, older manifests are",
		"WorkloadPriorityClassDefaulting is beta (on): a WorkloadPriorityClass named \"default\" applies to workloads without one",
		"Kubeflow Trainer v2.3 kinds and fields kueue-guard's pod-set arithmetic does not know",
	}},
}

// Assess says what is known of version against TestedVersion.
func Assess(version string) Support {
	s := Support{Version: version, Minor: Minor(version)}
	if s.Minor == "" {
		return s
	}
	tested := Minor(TestedVersion)
	s.Tested = s.Minor == tested
	older, newer := s.Minor, tested
	if compareMinor(older, newer) > 0 {
		older, newer = newer, older
	}
	for _, c := range changes {
		if compareMinor(c.since, older) > 0 && compareMinor(c.since, newer) <= 0 {
			s.Differences = append(s.Differences, c.differences...)
		}
	}
	if newer != tested {
		s.Differences = append(s.Differences, "released after kueue-guard's tested "+tested+": other differences are unknown")
	}
	return s
}

// Documented is what kueue-guard knows of each Kueue minor around the tested
// one, oldest first, for the support table of docs/kueue-compat.md.
func Documented() []Support {
	var out []Support
	for _, v := range []string{"v0.17.0", "v0.18.0", TestedVersion, "v0.20.0"} {
		s := Assess(v)
		s.Version = ""
		out = append(out, s)
	}
	return out
}

// compareMinor orders two "vX.Y" minors.
func compareMinor(a, b string) int {
	am, an := splitMinor(a)
	bm, bn := splitMinor(b)
	if am != bm {
		return am - bm
	}
	return an - bn
}

func splitMinor(m string) (int, int) {
	major, minor, _ := strings.Cut(strings.TrimPrefix(m, "v"), ".")
	x, _ := strconv.Atoi(major)
	y, _ := strconv.Atoi(minor)
	return x, y
}

// FormatFeatureGates renders gates as Kueue's --feature-gates flag takes them
// ("A=true,B=false"), sorted, so that a metric label or a report is stable.
func FormatFeatureGates(gates map[string]bool) string {
	out := make([]string, 0, len(gates))
	for g, on := range gates {
		out = append(out, fmt.Sprintf("%s=%t", g, on))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
