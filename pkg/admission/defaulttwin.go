package admission

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
// (and the namespace's default priority class), annotated as the webhook
// annotates it, and, for the kinds held by spec.suspend, suspended. The API
// server applies it before every mutating webhook, Kueue's included, so Kueue
// holds the labelled workload whatever the webhooks' order, and it holds while
// no kueue-guard replica answers. The other sources (rules, Kueue's default
// LocalQueue) read the cluster and stay the webhook's; the annotation comes
// first in the webhook too, so both choose the same queue.
func defaultQueueTwin() *MutatingTwin {
	var suspendKinds []string
	for _, in := range integrations.All() {
		if slices.Equal(in.Suspension.Field, []string{"spec", "suspend"}) {
			suspendKinds = append(suspendKinds, in.GVK.Group+"/"+in.GVK.Kind)
		}
	}
	ann := namespaceAnnotationCEL
	label := func(key string) string { return labelCEL("object", key) }
	kindKey := kindKeyCEL
	return &MutatingTwin{
		Name:      "default-queue",
		Step:      "queue-defaulting",
		ValuesKey: WorkloadTwinsValuesKey,
		Params:    []string{TrustedRequesterParam, ExemptNamespacesParam},
		// Kinds whose queue label is the object's own (not a CronJob's job
		// template, not a pod-based kind's template).
		MatchConstraints: workloadMatch(admissionregistrationv1.Create),
		MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: "labelled-in-place", Expression: kindKey + " in " + trust.CELList(ownLabelKinds())},
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
			admissionregistrationv1.Variable{Name: "queued", Expression: label(integrations.QueueNameLabel) + " != ''"},
			// Labelled as the Defaulter labels it: a top-level workload without a
			// queue Kueue does not ignore.
			admissionregistrationv1.Variable{Name: "label", Expression: "variables.top && !variables.queued && " +
				"variables.queue != '' && !variables.ignored"},
			// The namespace's default priority class, on a queued workload or one
			// labelled here, without one of its own.
			admissionregistrationv1.Variable{Name: "priority", Expression: "variables.top && (variables.queued || variables.label) && " +
				label(integrations.PriorityClassLabel) + " == '' ? " + ann(DefaultPriorityClassAnnotation) + " : ''"},
		),
		// The API server evaluates the variables again for each mutation, on the
		// object as the mutations before it left it: the hold comes first, while
		// the workload is still unqueued, then the label, then the priority class.
		Mutations: []admissionregistrationv1.Mutation{
			// Held as Kueue's webhook holds it; the other kinds are held by Kueue's
			// webhook, which sees the label whatever the webhooks' order.
			{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
				Expression: "variables.label && " + kindKey + " in " + trust.CELList(suspendKinds) +
					" ? Object{spec: Object.spec{suspend: true}} : Object{}",
			}},
			{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
				Expression: "variables.label ? Object{metadata: Object.metadata{labels: {'" + integrations.QueueNameLabel +
					"': variables.queue}, annotations: {'" + DefaultedByAnnotation + "': '" + SourceNamespaceAnnotation + "'}}} : Object{}",
			}},
			{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
				Expression: "variables.priority != '' ? Object{metadata: Object.metadata{labels: {'" + integrations.PriorityClassLabel +
					"': variables.priority}}} : Object{}",
			}},
		},
		ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
	}
}
