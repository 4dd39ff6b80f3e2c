package admission

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/trust"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// kueueMarkerCEL is ReleaseGuard's update check on the object's own
// metadata: an untrusted update that adds, changes or removes one of Kueue's
// reserved labels or annotations there (a Job's prebuilt-workload-name, a
// Pod's managed label). The webhook also walks every nested template, which
// CEL cannot, and judges a new object's markers against what Kueue's hold of
// it would write, which needs the Go hold; those stay the webhook's.
func kueueMarkerCEL() *CELTwin {
	changed := func(field string) string {
		in := func(root string) string {
			return fmt.Sprintf("(has(%[1]s.metadata.%[2]s) && k in %[1]s.metadata.%[2]s)", root, field)
		}
		return fmt.Sprintf("%[1]s != %[2]s || (%[1]s && oldObject.metadata.%[3]s[k] != object.metadata.%[3]s[k])",
			in("oldObject"), in("object"), field)
	}
	markers := trust.CELList(workload.ReservedMarkers)
	return &CELTwin{
		Name:             "marker-guard",
		Covers:           "updates of the object's own labels and annotations (not nested templates, not a new object's markers)",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam},
		MatchConstraints: workloadMatch(admissionregistrationv1.Update),
		Variables: append(judgedVariables(),
			// A ReplicaSet is judged by its owner alone (it is not a workload).
			admissionregistrationv1.Variable{Name: "workload", Expression: "!(request.kind.group == '" +
				replicaSetGVK.Group + "' && request.kind.kind == '" + replicaSetGVK.Kind + "')"},
			admissionregistrationv1.Variable{Name: "changedLabels", Expression: markers + ".filter(k, " + changed("labels") + ")"},
			admissionregistrationv1.Variable{Name: "changedAnnotations", Expression: markers + ".filter(k, " + changed("annotations") + ")"},
		),
		Validations: []admissionregistrationv1.Validation{{
			Expression: "!variables.judged || !variables.workload || " +
				"(size(variables.changedLabels) == 0 && size(variables.changedAnnotations) == 0)",
			Reason: ptr.To(metav1.StatusReasonForbidden),
			MessageExpression: `"[` + RuleNamespace + `.kueue_marker] " + (variables.changedLabels + variables.changedAnnotations)[0] + ` +
				`" is Kueue's own marker: only Kueue and the cluster's controllers add, change or remove it, since Kueue ` +
				`acts on it to decide what it holds and charges"`,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}
