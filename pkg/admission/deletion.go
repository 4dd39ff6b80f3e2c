package admission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const podDeletionGraceID = RuleNamespace + ".pod_deletion_grace_bounded"

// RulePodDeletionGrace bounds the grace period a pod's DELETE or eviction asks
// for. The shipped pod-termination-bounded policy bounds the one a pod template
// asks for, but a DELETE's gracePeriodSeconds overrides it and Kubernetes does
// not cap it, while Kueue 0.19 frees an evicted Job's quota once no pod is
// active, terminating ones aside (jobframework's reconciler clears the quota
// reservation when !job.IsActive(), and a Job is active while status.active
// is not 0). Only the API server sees a DELETE's options before it
// acts on them, and a policy it evaluates itself costs no webhook call on the
// deletions that name no grace period (nearly all), so the rule is a CEL twin
// alone.
var RulePodDeletionGrace = Register(Rule{
	ID:    podDeletionGraceID,
	Title: "Pod deletions end within the bound",
	Doc: "A DELETE or an eviction of a Pod asking for a grace period longer than the chart's " +
		"podDeletionGracePolicy.maxSeconds (300 s by default, as the shipped pod-termination-bounded policy) is " +
		"denied outside the namespaces kueue-guard exempts: Kubernetes does not cap it, and Kueue frees a Job's " +
		"quota once no pod is active, so a pod deleted with a week's grace could keep its devices a week on quota " +
		"given to another workload. The API server evaluates the rule itself; it has no webhook step.",
	Enforcement: EnforcementDeny,
	CEL:         podDeletionGraceCEL(),
})

// The CEL twin's parameters, computed by the chart from its values.
const (
	// MaxDeletionGraceParam is the longest grace period allowed, in seconds.
	MaxDeletionGraceParam = "maxDeletionGraceSeconds"
	// DefaultMaxDeletionGraceSeconds is its default (the chart's
	// podDeletionGracePolicy.maxSeconds, the shipped pod-termination-bounded
	// policy's bound).
	DefaultMaxDeletionGraceSeconds = 300
	// ExemptNamespacesParam are the namespaces kueue-guard's workload
	// webhooks skip, as a CEL list: the rule spares them too.
	ExemptNamespacesParam = "exemptNamespaces"
)

// podDeletionGraceCEL is the rule as the API server evaluates it: the grace
// period of a DELETE's options, or of an eviction's deleteOptions.
func podDeletionGraceCEL() *CELTwin {
	rule := func(op admissionregistrationv1.OperationType, resource string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
				Resources: []string{resource}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}}
	}
	return &CELTwin{
		Name:      "pod-deletion-grace",
		ValuesKey: "podDeletionGracePolicy",
		Params:    []string{MaxDeletionGraceParam, ExemptNamespacesParam},
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
			rule(admissionregistrationv1.Delete, "pods"), rule(admissionregistrationv1.Create, "pods/eviction"),
		}},
		Variables: []admissionregistrationv1.Variable{
			{Name: MaxDeletionGraceParam, Expression: ParamPlaceholder(MaxDeletionGraceParam)},
			{Name: ExemptNamespacesParam, Expression: ParamPlaceholder(ExemptNamespacesParam)},
			// A DELETE carries its options in the request; an eviction in its body.
			{Name: "options", Expression: `request.operation == "DELETE" ? ` +
				`(has(request.options) ? request.options : {}) : ` +
				`(has(object.deleteOptions) ? object.deleteOptions : {})`},
			{Name: "grace", Expression: `has(variables.options.gracePeriodSeconds) && ` +
				`variables.options.gracePeriodSeconds != null ? int(variables.options.gracePeriodSeconds) : 0`},
		},
		Validations: []admissionregistrationv1.Validation{{
			Expression: `request.namespace in variables.` + ExemptNamespacesParam +
				` || variables.grace <= int(variables.` + MaxDeletionGraceParam + `)`,
			Reason: ptr.To(metav1.StatusReasonInvalid),
			MessageExpression: `"[` + podDeletionGraceID + `] a grace period of " + string(variables.grace) + ` +
				`"s would keep the pod running that long after Kueue gives its quota to another workload; " + ` +
				`"delete it with --grace-period=" + string(variables.` + MaxDeletionGraceParam + `) + " or less, " + ` +
				`"or without one (its terminationGracePeriodSeconds applies)"`,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}
