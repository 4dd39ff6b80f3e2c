package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// The CEL the twins are built from, in one place: what a kind is called, how
// a field is read safely, and the per-kind reading of the catalog's places.

// kindKey is a catalog kind as the twins name it, "group/Kind".
func kindKey(in *integrations.Integration) string { return in.GVK.Group + "/" + in.GVK.Kind }

// kindKeyCEL is the request's kind as kindKey names it.
const kindKeyCEL = "request.kind.group + '/' + request.kind.kind"

// keyVariable holds kindKeyCEL once per request for perKindCEL.
var keyVariable = admissionregistrationv1.Variable{Name: "key", Expression: kindKeyCEL}

// perKindCEL is a conditional over the catalog on variables.key: the
// expression expr gives the request's kind, or otherwise for a kind it gives
// none (ok false). CEL evaluates only the chosen branch, so an expression may
// read fields other kinds lack.
func perKindCEL(expr func(in *integrations.Integration) (string, bool), otherwise string) string {
	out := otherwise
	for _, in := range slices.Backward(integrations.All()) {
		if e, ok := expr(in); ok {
			out = fmt.Sprintf("(variables.key == %s ? %s : %s)", trust.CELString(kindKey(in)), e, out)
		}
	}
	return out
}

// presentCEL tests that every level of path under root is set: reading a
// missing field is an error in CEL, so each twin tests before it reads.
func presentCEL(root string, path []string) string {
	terms := make([]string, 0, len(path))
	for i := range path {
		terms = append(terms, "has("+root+"."+strings.Join(path[:i+1], ".")+")")
	}
	return strings.Join(terms, " && ")
}

// trueAt is a CEL test that the boolean at path under root is set and true.
func trueAt(root string, path []string) string {
	return "(" + presentCEL(root, path) + " && " + root + "." + strings.Join(path, ".") + " == true)"
}

// labelAtCEL is the label key in the labels map at path under root, or the
// empty string.
func labelAtCEL(root string, path []string, key string) string {
	m := root + "." + strings.Join(path, ".")
	return fmt.Sprintf("(%s && %s in %s ? %s[%[2]s] : '')", presentCEL(root, path), trust.CELString(key), m, m)
}

// namespaceAnnotationCEL is an annotation of the request's namespace, or the
// empty string.
func namespaceAnnotationCEL(key string) string {
	return labelAtCEL("namespaceObject", []string{"metadata", "annotations"}, key)
}

// effectiveLabelCEL is workload.EffectiveLabel on the places the catalog
// names: the label where the kind keeps it, or, for a kind whose pods Kueue
// admits, the first pod template's (by path) that sets it.
func effectiveLabelCEL(root string, in *integrations.Integration, key string) string {
	own := labelAtCEL(root, in.LabelsPath(), key)
	if !in.TemplateQueue {
		return own
	}
	fallback := "''"
	for _, p := range slices.Backward(sortedTemplates(in)) {
		v := labelAtCEL(root, append(slices.Clone(p), "labels"), key)
		fallback = fmt.Sprintf("(%s != '' ? %s : %s)", v, v, fallback)
	}
	return fmt.Sprintf("(%s != '' ? %s : %s)", own, own, fallback)
}

// sortedTemplates are the kind's pod templates in path order, the order in
// which the webhook's walk reports them.
func sortedTemplates(in *integrations.Integration) [][]string {
	paths := slices.Clone(in.PodTemplates)
	slices.SortFunc(paths, func(a, b []string) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	return paths
}

// gatedCEL tests that root (a Pod) carries the named scheduling gate.
func gatedCEL(root, gate string) string {
	return fmt.Sprintf("(has(%[1]s.spec.schedulingGates) && %[1]s.spec.schedulingGates.exists(g, g.name == %[2]s))",
		root, trust.CELString(gate))
}

// onExistingClusterCEL is a kind Kueue may ignore (a RayJob) running on an
// existing cluster (spec.clusterSelector): Kueue leaves it alone.
const onExistingClusterCEL = "has(object.spec.clusterSelector) && size(object.spec.clusterSelector) > 0"
