package kueuecontroller

import (
	"regexp"
	"strings"
)

// TestedVersion is the Kueue release whose code kueue-guard computes with (the
// sigs.k8s.io/kueue module in go.mod) and whose manager every integration suite
// runs (hack/kueue/go.mod); a unit test keeps the three equal.
const TestedVersion = "v0.19.2"

// labelVersion is the label Kueue's chart and kustomize config put on the
// manager's Deployment and pods, with the release ("v0.19.2").
const labelVersion = "app.kubernetes.io/version"

// releaseRE matches a Kueue release as image tags and chart labels write it:
// v0.19.2, 0.19.6-aks.20260901 (AKS's managed extension), v0.21.0-rc.1.
var releaseRE = regexp.MustCompile(`^v?(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})([-+][0-9A-Za-z.+-]{0,64})?$`)

// versionOf is the release an object that runs Kueue's manager says it is: the
// tag of its manager image, else the app.kubernetes.io/version label (object,
// then pod template), else the version in helm.sh/chart=kueue-<version>. A
// digest-only image with no labels has none (""). It names, never proves: the
// admins' own labels and tags are read, so it is shown and compared, never
// used to decide what to admit.
func versionOf(image string, own, template map[string]any) string {
	if v := normalizeRelease(ImageTag(image)); v != "" {
		return v
	}
	for _, labels := range []map[string]any{own, template} {
		if s, _ := labels[labelVersion].(string); normalizeRelease(s) != "" {
			return normalizeRelease(s)
		}
	}
	if chart, _ := own[labelHelmChart].(string); isKueueChart(chart) {
		return normalizeRelease(strings.TrimPrefix(chart, "kueue-"))
	}
	return ""
}

// ImageTag is the tag of an image reference ("" without one): what follows the
// last colon after the last slash, before any digest.
func ImageTag(image string) string {
	ref := strings.TrimSpace(image)
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || i < strings.LastIndexByte(ref, '/') {
		return ""
	}
	return ref[i+1:]
}

// normalizeRelease returns a release with its leading "v" ("0.19.6-aks.1" →
// "v0.19.6-aks.1"), or "" when s is not one (latest, main, a digest).
func normalizeRelease(s string) string {
	if !releaseRE.MatchString(s) {
		return ""
	}
	return "v" + strings.TrimPrefix(s, "v")
}

// Minor is a release's "v0.19" ("" for one that is not a release).
func Minor(version string) string {
	m := releaseRE.FindStringSubmatch(version)
	if m == nil {
		return ""
	}
	return "v" + m[1] + "." + m[2]
}
