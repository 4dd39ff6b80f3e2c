package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// labelMismatchCEL is LabelConsistency on the pod templates the catalog
// places (integrations.Integration.PodTemplates): a queue or priority label
// there must equal the workload's own (workload.EffectiveLabel: for a kind
// whose pods Kueue admits, the first template's when the object has none).
// The webhook walks every other nested labels map too (a JobSet's job
// templates, Kubeflow's replica specs), which CEL cannot on an object of
// unknown shape.
func labelMismatchCEL() *CELTwin {
	// mismatch is the first pod template (as a field path) whose label key
	// differs from the workload's, or ''.
	mismatch := func(key string) string {
		return perKindCEL(func(in *integrations.Integration) (string, bool) {
			if len(in.PodTemplates) == 0 {
				return "", false
			}
			want := effectiveLabelCEL("object", in, key)
			found := "''"
			for _, p := range slices.Backward(sortedTemplates(in)) {
				labels := "object." + strings.Join(p, ".") + ".labels"
				present := presentCEL("object", append(slices.Clone(p), "labels")) + " && " + trust.CELString(key) + " in " + labels
				found = fmt.Sprintf("(%s && %s[%s] != %s ? %s : %s)", present, labels, trust.CELString(key), want,
					trust.CELString(strings.TrimPrefix(labels, "object.")), found)
			}
			return found, true
		}, "''")
	}
	return &CELTwin{
		Name:             "label-consistency",
		Covers:           "the pod templates at a fixed place: a Job's, a CronJob's, a Deployment's, a StatefulSet's, a LeaderWorkerSet's",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam},
		MatchConstraints: workloadMatch(admissionregistrationv1.Create, admissionregistrationv1.Update),
		Variables: append(judgedVariables(),
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
