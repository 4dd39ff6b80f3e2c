package admission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// The CEL twins of the workload guards that need only the request: the API
// server evaluates them itself, so they hold while no kueue-guard replica
// answers. Each decides as its Go check does on every request the check sees
// (test/parity sends the same requests to both); where the Go check reads the
// cluster, the twin's AlsoUnder names the rule the webhook then denies under.

// The twins' parameters the chart computes from its values.
const (
	// TrustedRequesterParam is trust.controllers as a CEL expression over
	// request.userInfo (trust.Matcher.CEL).
	TrustedRequesterParam = "trustedRequester"
	// ExternalFrameworksParam are Kueue's externalFrameworks ("Kind.version.group"),
	// as a CEL list: the webhook reads them from Kueue's Configuration.
	ExternalFrameworksParam = "kueueExternalFrameworks"
)

// WorkloadTwinsValuesKey is the chart value (a map with enabled) that switches
// the workload guards' twins on; test/parity compares them with the webhook.
const WorkloadTwinsValuesKey = "apiServerRules"

// The ids of the rules with a twin here (their twins' messages carry them).
const (
	untrustedOwnerID    = RuleNamespace + ".untrusted_owner"
	onlyKueueReleasesID = RuleNamespace + ".only_kueue_releases"
)

// workloadMatch matches what the validating workload webhook is sent: every
// catalog kind, and ReplicaSets (Kueue's interim owner), on the operations.
func workloadMatch(ops ...admissionregistrationv1.OperationType) *admissionregistrationv1.MatchResources {
	var rules []admissionregistrationv1.NamedRuleWithOperations
	add := func(group, version string, resources ...string) {
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version},
				Resources: resources, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}})
	}
	for _, r := range integrations.WebhookRules() {
		add(r.Group, r.Version, r.Resources...)
	}
	add(InterimOwnerResource.Group, InterimOwnerResource.Version, InterimOwnerResource.Resource)
	return &admissionregistrationv1.MatchResources{ResourceRules: rules}
}

// judgedVariables are the variables every workload twin starts with: who is
// trusted, and which namespaces the webhooks skip.
func judgedVariables() []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: TrustedRequesterParam, Expression: ParamPlaceholder(TrustedRequesterParam)},
		{Name: ExemptNamespacesParam, Expression: ParamPlaceholder(ExemptNamespacesParam)},
		keyVariable,
		{Name: "judged", Expression: "!variables." + TrustedRequesterParam +
			" && !(request.namespace in variables." + ExemptNamespacesParam + ")"},
	}
}

// untrustedOwnerCEL is OwnerGuard and InterimOwnerGuard (ownerDenial): an
// untrusted object's first controller owner, of a kind Kueue counts its
// children under or walks through, unless an UPDATE keeps the owner's uid.
func untrustedOwnerCEL() *CELTwin {
	var managed []string
	for _, o := range integrations.ManagedOwners() {
		managed = append(managed, o.APIVersion+"/"+o.Kind)
	}
	interim := replicaSetGVK.GroupVersion().String() + "/" + replicaSetGVK.Kind
	const owner = "variables.controllers[0]"
	return &CELTwin{
		Name:             "owner-guard",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam, ExternalFrameworksParam},
		MatchConstraints: workloadMatch(admissionregistrationv1.Create, admissionregistrationv1.Update),
		Variables: append(judgedVariables(),
			admissionregistrationv1.Variable{Name: ExternalFrameworksParam, Expression: ParamPlaceholder(ExternalFrameworksParam)},
			admissionregistrationv1.Variable{Name: "controllers", Expression: `has(object.metadata.ownerReferences) ? ` +
				`object.metadata.ownerReferences.filter(r, has(r.controller) && r.controller) : []`},
			admissionregistrationv1.Variable{Name: "ownerKey", Expression: `size(variables.controllers) == 0 ? '' : ` +
				owner + `.apiVersion + '/' + ` + owner + `.kind`},
			// Kueue's externalFrameworks name a kind "Kind.version.group".
			admissionregistrationv1.Variable{Name: "external", Expression: `size(variables.controllers) > 0 && ` +
				owner + `.apiVersion.contains('/') && (` + owner + `.kind + '.' + ` + owner + `.apiVersion.split('/')[1] + '.' + ` +
				owner + `.apiVersion.split('/')[0]) in variables.` + ExternalFrameworksParam},
			admissionregistrationv1.Variable{Name: "interim", Expression: `variables.ownerKey == '` + interim + `'`},
			admissionregistrationv1.Variable{Name: "counted", Expression: `variables.ownerKey in ` + trust.CELList(managed) +
				` || variables.external`},
			// On UPDATE only a changed controller owner is judged, so existing objects are not wedged.
			admissionregistrationv1.Variable{Name: "kept", Expression: `request.operation == 'UPDATE' && ` +
				`has(oldObject.metadata.ownerReferences) && ` +
				`size(oldObject.metadata.ownerReferences.filter(r, has(r.controller) && r.controller)) > 0 && ` +
				`oldObject.metadata.ownerReferences.filter(r, has(r.controller) && r.controller)[0].uid == ` + owner + `.uid`},
		),
		Validations: []admissionregistrationv1.Validation{{
			Expression: `!variables.judged || !(variables.counted || variables.interim) || variables.kept`,
			Reason:     ptr.To(metav1.StatusReasonForbidden),
			MessageExpression: `"[` + untrustedOwnerID + `] " + request.kind.kind + " \"" + object.metadata.name + ` +
				`"\" names " + ` + owner + `.kind + " \"" + ` + owner + `.name + "\" as its controller owner, but " + ` +
				`(variables.interim ? "only Kubernetes' controllers make what a ReplicaSet owns: Kueue walks through a " + ` +
				`"ReplicaSet to the workload that owns it" : "only that workload's controller may create its parts: Kueue would ` +
				`count it as part of \"" + ` + owner + `.name + "\"") + " and never queue it; remove the owner reference"`,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}

// onlyKueueReleasesCEL is ReleaseGuard's resume check: an untrusted UPDATE
// that takes a queued workload out of Kueue's hold. The Go check also lets
// Kueue's absence decide (kueue_absent denies the same update then) and spares
// Pods in namespaces Kueue does not manage, which Kueue never gated.
func onlyKueueReleasesCEL() *CELTwin {
	return &CELTwin{
		Name:             "release-guard",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam, InstallProfileParam, EnabledFrameworksParam},
		AlsoUnder:        []string{RuleKueueAbsent},
		MatchConstraints: workloadMatch(admissionregistrationv1.Update),
		Variables: append(append(judgedVariables(), unsupportedVariables()...),
			admissionregistrationv1.Variable{Name: "queued", Expression: labelAtCEL("object", ownLabels, integrations.QueueNameLabel) + " != ''"},
			admissionregistrationv1.Variable{Name: "resumes", Expression: resumesCEL(true)},
		),
		// A kind the install does not integrate is not Kueue's to resume.
		Validations: []admissionregistrationv1.Validation{{
			Expression: `!variables.judged || !variables.queued || !variables.resumes || variables.unsupported`,
			Reason:     ptr.To(metav1.StatusReasonForbidden),
			MessageExpression: `"[` + onlyKueueReleasesID + `] " + request.kind.kind + " \"" + object.metadata.name + ` +
				`"\" is queued: Kueue resumes it once it admits it, and nobody else may; leave its suspension as it is"`,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}
