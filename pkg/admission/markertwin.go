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
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// kueueMarkerCEL is ReleaseGuard's update check on the object's own
// metadata and, for the kinds whose pods Kueue admits, their pod templates':
// an untrusted update that adds, changes or removes one of Kueue's reserved
// labels or annotations there (a Job's prebuilt-workload-name, a Pod's
// managed label, a Deployment template's pod-suspending-parent). The webhook
// also walks every other nested template, which CEL cannot, and judges a new
// object's markers against what Kueue's hold of it would write, which needs
// the Go hold; those stay the webhook's.
func kueueMarkerCEL() *CELTwin {
	markers := trust.CELList(workload.ReservedMarkers)
	// changed lists the markers that differ between the two objects in the
	// metadata at path.
	changed := func(path []string) string {
		var terms []string
		for _, field := range []string{"labels", "annotations"} {
			at := append(slices.Clone(path), field)
			in := func(root string) string {
				return "(" + presentCEL(root, at) + " && k in " + root + "." + strings.Join(at, ".") + ")"
			}
			terms = append(terms, fmt.Sprintf("%[1]s != %[2]s || (%[1]s && oldObject.%[3]s[k] != object.%[3]s[k])",
				in("oldObject"), in("object"), strings.Join(at, ".")))
		}
		return markers + ".filter(k, " + strings.Join(terms, " || ") + ")"
	}
	templates := perKindCEL(func(in *integrations.Integration) (string, bool) {
		var each []string
		for _, t := range in.PodTemplates {
			each = append(each, changed(t))
		}
		return strings.Join(each, " + "), len(each) > 0
	}, "[]")
	return &CELTwin{
		Name: "marker-guard",
		Covers: "updates of the object's own labels and annotations and of a pod-based kind's pod templates " +
			"(not other nested templates, not a new object's markers)",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam},
		MatchConstraints: workloadMatch(admissionregistrationv1.Update),
		Variables: append(judgedVariables(),
			// A ReplicaSet is judged by its owner alone (it is not a workload).
			admissionregistrationv1.Variable{Name: "workload", Expression: "!(request.kind.group == '" +
				replicaSetGVK.Group + "' && request.kind.kind == '" + replicaSetGVK.Kind + "')"},
			admissionregistrationv1.Variable{Name: "changed", Expression: changed([]string{"metadata"}) + " + " + templates},
		),
		Validations: []admissionregistrationv1.Validation{{
			Expression: "!variables.judged || !variables.workload || size(variables.changed) == 0",
			Reason:     ptr.To(metav1.StatusReasonForbidden),
			MessageExpression: `"[` + RuleNamespace + `.kueue_marker] " + variables.changed[0] + ` +
				`" is Kueue's own marker: only Kueue and the cluster's controllers add, change or remove it, since Kueue ` +
				`acts on it to decide what it holds and charges"`,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}
