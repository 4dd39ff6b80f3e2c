package admission

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// MutatingTwin is a MutatingAdmissionPolicy the chart installs (Kubernetes 1.36
// and later): a mutating step, or the part of one that needs only the request
// and the namespace, as the API server applies it itself.
type MutatingTwin struct {
	// Name is appended to the release's full name to name the policy.
	Name string
	// Step is the mutating step it twins.
	Step string
	// ValuesKey is the chart value (a map with enabled) that switches it on.
	ValuesKey string
	// Params are variables whose expressions the chart computes (ParamPlaceholder).
	Params []string
	// The policy's spec, as in admissionregistration.k8s.io/v1.
	MatchConstraints   *admissionregistrationv1.MatchResources
	MatchConditions    []admissionregistrationv1.MatchCondition
	Variables          []admissionregistrationv1.Variable
	Mutations          []admissionregistrationv1.Mutation
	ReinvocationPolicy admissionregistrationv1.ReinvocationPolicyType
	FailurePolicy      *admissionregistrationv1.FailurePolicyType
}

// MutatingTwins are the mutating steps' twins, in name order.
func MutatingTwins() []*MutatingTwin { return []*MutatingTwin{defaultQueueTwin()} }

// defaultQueueTwin is the Defaulter's first source, the namespace's
// kueue-guard.io/default-queue annotation, as a MutatingAdmissionPolicy: a new
// top-level workload without a queue in such a namespace is labelled with it
// where its kind keeps the label (a CronJob's job template), with the
// namespace's default priority class, annotated as the webhook annotates it,
// and, for the kinds held by spec.suspend, suspended. The API server applies
// it before every mutating webhook, Kueue's included, so Kueue holds the
// labelled workload (a Pod's gate, a Deployment's pods) whatever the webhooks'
// order, and it holds while no kueue-guard replica answers. The other sources
// (rules, Kueue's default LocalQueue) read the cluster and stay the webhook's;
// the annotation comes first in the webhook too, so both choose the same queue.
func defaultQueueTwin() *MutatingTwin {
	var suspendKinds, kinds []string
	for _, in := range integrations.All() {
		if in.GVK.GroupKind() == noApplyKind {
			continue
		}
		kinds = append(kinds, kindKey(in))
		if slices.Equal(in.Suspension.Field, []string{"spec", "suspend"}) {
			suspendKinds = append(suspendKinds, kindKey(in))
		}
	}
	ann := namespaceAnnotationCEL
	return &MutatingTwin{
		Name:             "default-queue",
		Step:             "queue-defaulting",
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           []string{TrustedRequesterParam, ExemptNamespacesParam},
		MatchConstraints: workloadMatch(admissionregistrationv1.Create),
		// The catalog's kinds (not a ReplicaSet, which the webhooks judge by its owner alone).
		MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: "workload", Expression: kindKeyCEL + " in " + trust.CELList(kinds)},
		},
		Variables: append(judgedVariables(),
			admissionregistrationv1.Variable{Name: "ignored", Expression: ignoredCEL()},
			// The webhooks' match condition leaves a trusted controller's part of
			// another workload alone; so does this.
			admissionregistrationv1.Variable{Name: "part", Expression: trust.OwnerCEL() + " && variables." + TrustedRequesterParam},
			admissionregistrationv1.Variable{Name: "top", Expression: "!variables.part && " +
				"!(request.namespace in variables." + ExemptNamespacesParam + ")"},
			// namespaceObject is not known to match conditions: the annotations are read here.
			admissionregistrationv1.Variable{Name: "queue", Expression: ann(DefaultQueueAnnotation)},
			admissionregistrationv1.Variable{Name: "queued", Expression: hasLabelCEL(integrations.QueueNameLabel)},
			// Labelled as the Defaulter labels it: a top-level workload without a
			// queue Kueue does not ignore.
			admissionregistrationv1.Variable{Name: "label", Expression: "variables.top && !variables.queued && " +
				"variables.queue != '' && !variables.ignored"},
			// The namespace's default priority class, on a queued workload or one
			// labelled here, without one of its own.
			admissionregistrationv1.Variable{Name: "priority", Expression: "variables.top && (variables.queued || variables.label) && !" +
				hasLabelCEL(integrations.PriorityClassLabel) + " ? " + ann(DefaultPriorityClassAnnotation) + " : ''"},
		),
		// The API server evaluates the variables again for each mutation, on the
		// object as the mutations before it left it: the hold comes first, while
		// the workload is still unqueued, then the label, then the priority class.
		Mutations: []admissionregistrationv1.Mutation{
			// Held as Kueue's webhook holds it; the other kinds are held by Kueue's
			// webhook, which sees the label whatever the webhooks' order.
			applyMutation("variables.label && variables.key in " + trust.CELList(suspendKinds) +
				" ? Object{spec: Object.spec{suspend: true}} : Object{}"),
			applyMutation("variables.label ? " + metadataApply("labels: {'"+integrations.QueueNameLabel+"': variables.queue}, "+
				"annotations: {'"+DefaultedByAnnotation+"': '"+SourceNamespaceAnnotation+"'}") + " : Object{}"),
			applyMutation("variables.priority != '' ? " + metadataApply("labels: {'"+integrations.PriorityClassLabel+
				"': variables.priority}") + " : Object{}"),
		},
		ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
	}
}

// noApplyKind is left to the webhook. A LeaderWorkerSet without
// spec.rolloutStrategy that reaches Kueue's LeaderWorkerSet webhook already
// queued (this policy's label, or a tenant's own) comes back with an empty
// spec.rolloutStrategy.type, which the CRD refuses; the one kueue-guard's
// webhook labels and holds is admitted. test/parity found it (and shows the
// tenant's own queued one refused on every side).
var noApplyKind = schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}

func applyMutation(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
}

// metadataApply is an apply configuration that sets fields in the metadata
// where the request's kind keeps its queue label (the object's own, a
// CronJob's job template's): a conditional over the catalog's places.
func metadataApply(fields string) string {
	out := ""
	seen := map[string]bool{}
	for _, in := range integrations.All() {
		path := in.QueueLabelPath
		if seen[strings.Join(path, ".")] {
			continue
		}
		seen[strings.Join(path, ".")] = true
		// Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{metadata: Object.spec.jobTemplate.metadata{...}}}}
		body := fields
		for i, field := range slices.Backward(path) {
			body = field + ": Object." + strings.Join(path[:i+1], ".") + "{" + body + "}"
		}
		apply := "Object{" + body + "}"
		if out == "" {
			out = apply
			continue
		}
		var kinds []string
		for _, k := range integrations.All() {
			if slices.Equal(k.QueueLabelPath, path) {
				kinds = append(kinds, kindKey(k))
			}
		}
		out = "(variables.key in " + trust.CELList(kinds) + " ? " + apply + " : " + out + ")"
	}
	return out
}

// hasLabelCEL tests that the request's object carries the label with a value
// where its kind keeps it, or, for a kind whose pods Kueue admits, in a pod
// template (workload.EffectiveLabel).
func hasLabelCEL(key string) string {
	return perKindCEL(func(in *integrations.Integration) (string, bool) {
		return effectiveLabelCEL("object", in, key) + " != ''", true
	}, "false")
}
