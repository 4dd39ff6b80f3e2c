package admission

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// The unsupported-integration twin's parameters, from config.installProfile
// and config.integrations.
const (
	// InstallProfileParam is config.installProfile as a CEL string.
	InstallProfileParam = "installProfile"
	// EnabledFrameworksParam is config.integrations.frameworks as a CEL list:
	// under the oss profile, empty means "read Kueue's Configuration", which
	// only the webhook can, so the twin then judges nothing.
	EnabledFrameworksParam = "enabledFrameworks"
	// IntegrationsActionParam names the binding's validationActions: Warn
	// when config.integrations.action is warn, else Deny.
	IntegrationsActionParam = "integrationsAction"
)

// unsupportedIntegrationCEL is IntegrationGuard: a queued workload of a kind
// the install does not integrate. It reads the queue where the kind keeps its
// own label (or, for a pod-based kind, its pod template's) and, on CREATE
// without one, the namespace's annotated default queue; Kueue's default
// LocalQueue and the defaulting rules stay the webhook's.
func unsupportedIntegrationCEL() *CELTwin {
	queueOf := func(root string) string {
		return perKindCEL(func(in *integrations.Integration) (string, bool) {
			return effectiveLabelCEL(root, in, integrations.QueueNameLabel), true
		}, "''")
	}
	return &CELTwin{
		Name: "integration-guard",
		Covers: "the managed profile, or oss with integrations.frameworks set (not Kueue's Configuration); a queue in " +
			"the kind's own place or from the namespace's default-queue annotation",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam, InstallProfileParam, EnabledFrameworksParam},
		Action:           IntegrationsActionParam,
		MatchConstraints: workloadMatch(admissionregistrationv1.Create, admissionregistrationv1.Update),
		Variables: append(append(topVariables(), unsupportedVariables()...),
			// On CREATE a workload without a queue gets the namespace's
			// annotated default (effectiveQueue), whether or not defaulting ran.
			admissionregistrationv1.Variable{Name: "ownQueue", Expression: queueOf("object")},
			admissionregistrationv1.Variable{Name: "queue", Expression: "variables.ownQueue != '' || request.operation != 'CREATE' ? " +
				"variables.ownQueue : " + namespaceAnnotationCEL(DefaultQueueAnnotation)},
			admissionregistrationv1.Variable{Name: "oldQueue", Expression: "request.operation == 'UPDATE' ? " + queueOf("oldObject") + " : ''"},
			// Judged on CREATE, and on an UPDATE that changes the queue of an
			// object not being deleted (its cleanup must finish).
			admissionregistrationv1.Variable{Name: "judgedOp", Expression: "request.operation == 'CREATE' || " +
				"(variables.ownQueue != variables.oldQueue && !has(oldObject.metadata.deletionTimestamp))"},
		),
		Validations: []admissionregistrationv1.Validation{{
			Expression: "!variables.top || !variables.unsupported || variables.queue == '' || !variables.judgedOp",
			Reason:     ptr.To(metav1.StatusReasonForbidden),
			MessageExpression: `"[` + RuleNamespace + `.unsupported_integration] " + request.kind.kind + " (" + ` +
				`variables.frameworks[variables.key][0] + ") is not " + (variables.` + InstallProfileParam + ` == 'managed' ? ` +
				`"supported by the managed Kueue install" : "enabled in kueue-guard's integrations.frameworks") + ` +
				`": Kueue will not manage it, so it would run outside quota"`,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}

// unsupportedVariables decide, as IntegrationGuard.Supported does from the
// twin's parameters, whether the install does not integrate the kind
// (variables.unsupported; variables.frameworks names it in messages). They
// need judgedVariables' key.
func unsupportedVariables() []admissionregistrationv1.Variable {
	var managed, frameworks []string
	for _, in := range integrations.All() {
		if in.Managed {
			managed = append(managed, kindKey(in))
		}
		frameworks = append(frameworks, trust.CELString(kindKey(in))+": "+
			trust.CELList([]string{in.EffectiveFramework(), in.GVK.Kind + "." + in.GVK.Version + "." + in.GVK.Group}))
	}
	return []admissionregistrationv1.Variable{
		{Name: InstallProfileParam, Expression: ParamPlaceholder(InstallProfileParam)},
		{Name: EnabledFrameworksParam, Expression: ParamPlaceholder(EnabledFrameworksParam)},
		{Name: "frameworks", Expression: "{" + strings.Join(frameworks, ", ") + "}"},
		{Name: "unsupported", Expression: "variables.key in variables.frameworks && (variables." +
			InstallProfileParam + " == 'managed' ? !(variables.key in " + trust.CELList(managed) + ") : size(variables." +
			EnabledFrameworksParam + ") > 0 && !variables.frameworks[variables.key].exists(f, f in variables." +
			EnabledFrameworksParam + "))"},
	}
}
