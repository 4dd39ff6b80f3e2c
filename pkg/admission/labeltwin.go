package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

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

// labelMismatchCEL is LabelConsistency on the pod templates the catalog
// places (integrations.Integration.PodTemplates): a queue or priority label
// there must equal the workload's own (workload.EffectiveLabel: for a kind
// whose pods Kueue admits, the first template's when the object has none).
// The webhook walks every other nested labels map too (a JobSet's job
// templates, Kubeflow's replica specs), which CEL cannot on an object of
// unknown shape.
func labelMismatchCEL() *CELTwin {
	mismatch := func(key string) string {
		out := "''"
		for _, in := range integrations.All() {
			if len(in.PodTemplates) == 0 {
				continue
			}
			want := effectiveLabelCEL("object", in, key)
			paths := sortedTemplates(in)
			// The first template whose label differs, as a field path, or ''.
			found := "''"
			for _, p := range slices.Backward(paths) {
				labels := append(slices.Clone(p), "labels")
				present := presentCEL("object", labels) + " && '" + key + "' in object." + strings.Join(labels, ".")
				found = fmt.Sprintf("(%s && object.%s['%s'] != %s ? '%s' : %s)", present, strings.Join(labels, "."), key, want,
					strings.Join(labels, "."), found)
			}
			out = fmt.Sprintf("variables.key == '%s/%s' ? %s : %s", in.GVK.Group, in.GVK.Kind, found, out)
		}
		return out
	}
	return &CELTwin{
		Name:             "label-consistency",
		Covers:           "the pod templates at a fixed place: a Job's, a CronJob's, a Deployment's, a StatefulSet's, a LeaderWorkerSet's",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam},
		MatchConstraints: workloadMatch(admissionregistrationv1.Create, admissionregistrationv1.Update),
		Variables: append(judgedVariables(),
			admissionregistrationv1.Variable{Name: "key", Expression: kindKeyCEL},
			admissionregistrationv1.Variable{Name: "queueAt", Expression: mismatch(integrations.QueueNameLabel)},
			admissionregistrationv1.Variable{Name: "priorityAt", Expression: mismatch(integrations.PriorityClassLabel)},
			admissionregistrationv1.Variable{Name: "at", Expression: "variables.queueAt != '' ? variables.queueAt : variables.priorityAt"},
		),
		Validations: []admissionregistrationv1.Validation{{
			Expression: "!variables.judged || variables.at == ''",
			Reason:     ptr.To(metav1.StatusReasonForbidden),
			MessageExpression: `"[` + RuleNamespace + `.label_mismatch] " + (variables.queueAt != '' ? "` + integrations.QueueNameLabel +
				`" : "` + integrations.PriorityClassLabel + `") + " in " + variables.at + " differs from the " + request.kind.kind + ` +
				`"'s own: Kueue would act on both; remove it there or set the same value"`,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}
