// Package webhookconfig builds kueue-guard's webhook configurations from the
// integration catalog and the handler paths, so that the chart, `make run` and the
// tests register exactly the kinds the server handles and never retype the list.
package webhookconfig

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// Configuration names. The mutating one must sort before Kueue's
// "kueue-mutating-webhook-configuration": the API server calls mutating
// configurations in name order, and Kueue's webhook must see our queue label to
// suspend the job at creation.
const (
	MutatingName   = "kueue-guard-mutating"
	ValidatingName = "kueue-guard-validating"
)

// Webhook names (fully qualified, as the API server requires).
const (
	MutateWorkloadsWebhook          = "mutate-workloads.kueue-guard.io"
	ValidateWorkloadsWebhook        = "validate-workloads.kueue-guard.io"
	ValidateKueueControllersWebhook = "validate-kueue-controllers.kueue-guard.io"
)

// Options say where the server is and how the API server should treat it.
type Options struct {
	// Service is the webhook Service; its Path is set per webhook.
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	CABundle                      []byte
	// ExcludeNamespaces are never sent to the workload webhooks (kube-system and
	// our own namespace in production).
	ExcludeNamespaces []string
	TimeoutSeconds    int32
	// TrustedRequester is the CEL expression of trusted controllers
	// (trust.Matcher.CEL); empty trusts nobody, so every workload is sent.
	TrustedRequester string
}

func (o Options) topLevel() admissionregistrationv1.MatchCondition {
	t := o.TrustedRequester
	if t == "" {
		t = "false"
	}
	return TopLevelCondition(t)
}

// WorkloadRules are the admission rules for every catalog kind.
func WorkloadRules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	var rules []admissionregistrationv1.RuleWithOperations
	for _, r := range integrations.WebhookRules() {
		rules = append(rules, admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{r.Group},
				APIVersions: []string{r.Version},
				Resources:   r.Resources,
				Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
			},
		})
	}
	return rules
}

// InterimOwnerRule is the admission rule for ReplicaSets, the owners Kueue
// walks through to a workload: the validating path judges their owner.
func InterimOwnerRule() admissionregistrationv1.RuleWithOperations {
	r := admission.InterimOwnerResource
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{r.Version},
			Resources: []string{r.Resource}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}
}

// ScaleRules are the admission rules for the scale subresource of the kinds
// whose scale is judged as an update of the workload (ScaleJudged in the catalog).
func ScaleRules() []admissionregistrationv1.RuleWithOperations {
	var rules []admissionregistrationv1.RuleWithOperations
	for _, in := range integrations.ScaleJudged() {
		gvk := in.GVK
		rules = append(rules, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{gvk.Group}, APIVersions: []string{gvk.Version},
				Resources: []string{in.Resource + "/" + admission.ScaleSubResource},
				Scope:     ptr.To(admissionregistrationv1.NamespacedScope),
			},
		})
	}
	return rules
}

func (o Options) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{
			Namespace: o.ServiceNamespace, Name: o.ServiceName, Path: new(path), Port: new(o.port()),
		},
		CABundle: o.CABundle,
	}
}

func (o Options) port() int32 {
	if o.ServicePort == 0 {
		return 443
	}
	return o.ServicePort
}

func (o Options) timeout() *int32 {
	if o.TimeoutSeconds == 0 {
		return ptr.To[int32](5)
	}
	return new(o.TimeoutSeconds)
}

func (o Options) namespaceSelector() *metav1.LabelSelector {
	if len(o.ExcludeNamespaces) == 0 {
		return &metav1.LabelSelector{}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: o.ExcludeNamespaces,
	}}}
}

// Mutating is the mutating configuration: queue-name defaulting on CREATE of every
// catalog kind. Its failure policy is Ignore: a webhook that is down must not stop
// workloads (they only miss a default), and reinvocation keeps it idempotent with
// other mutating webhooks.
func Mutating(o Options) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    MutateWorkloadsWebhook,
			ClientConfig:            o.clientConfig(MutateWorkloadsPath),
			Rules:                   WorkloadRules(admissionregistrationv1.Create),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       o.namespaceSelector(),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          o.timeout(),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			MatchConditions:         []admissionregistrationv1.MatchCondition{o.topLevel()},
		}},
	}
}

// ControllerRules are the admission rules of the Kueue controller guard: every
// kind that can run a controller manager. Webhook configurations are not listed:
// the API server never sends them to admission webhooks (so that a webhook can
// never lock itself in), so the guard's check of Kueue webhook configurations
// runs only offline, in `kueue-guard review`.
func ControllerRules() []admissionregistrationv1.RuleWithOperations {
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	var rules []admissionregistrationv1.RuleWithOperations
	idx := map[string]int{}
	for _, k := range admission.ControllerKinds() {
		gv := k.GVK.GroupVersion().String()
		i, ok := idx[gv]
		if !ok {
			i = len(rules)
			idx[gv] = i
			rules = append(rules, admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
				APIGroups: []string{k.GVK.Group}, APIVersions: []string{k.GVK.Version},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope)}})
		}
		rules[i].Resources = append(rules[i].Resources, k.Resource)
		for _, sub := range k.SubResources {
			rules[i].Resources = append(rules[i].Resources, k.Resource+"/"+sub)
		}
	}
	return rules
}

// Validating is the validating configuration: the workload guards and policies,
// and the Kueue controller guard. Both fail closed: a guard that is down must not
// let an unsupported workload or a second Kueue slip through. The controller
// guard sees every namespace but our own (a second Kueue may hide anywhere); the
// workload webhook skips kube-system too.
func Validating(o Options) *admissionregistrationv1.ValidatingWebhookConfiguration {
	ownOnly := Options{ExcludeNamespaces: o.ownNamespaces()}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         ValidateWorkloadsWebhook,
			ClientConfig: o.clientConfig(ValidateWorkloadsPath),
			Rules: append(append(WorkloadRules(admissionregistrationv1.Create, admissionregistrationv1.Update), ScaleRules()...),
				InterimOwnerRule()),
			MatchConditions:         []admissionregistrationv1.MatchCondition{o.topLevel()},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       o.namespaceSelector(),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          o.timeout(),
			AdmissionReviewVersions: []string{"v1"},
		}, {
			Name:            ValidateKueueControllersWebhook,
			ClientConfig:    o.clientConfig(ValidateKueueControllersPath),
			Rules:           ControllerRules(),
			MatchConditions: []admissionregistrationv1.MatchCondition{MayRunKueueCondition()},
			// Fail open: the guard protects against an admin's mistake (a second
			// Kueue), not a tenant, and sees Deployments and Pods in every
			// namespace; failing closed, a kueue-guard outage would block
			// Kueue's, cert-manager's and everyone's rollouts.
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       ownOnly.namespaceSelector(),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          o.timeout(),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// ownNamespaces is the server's own namespace, the only one the controller guard
// does not see (so that our own rollout never depends on ourselves).
func (o Options) ownNamespaces() []string {
	if o.ServiceNamespace == "" {
		return nil
	}
	return []string{o.ServiceNamespace}
}
