package admission

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// The CEL twins of the guards that keep a workload in its queue: queue
// retention, queue immutability and the defaulting backstop. They cover the
// kinds whose queue label is the object's own (as the default-queue twin
// does), and of "must this namespace's workloads be queued" the part the
// request shows: the namespace's kueue-guard.io/default-queue annotation. The
// other sources (defaulting rules, Kueue's default LocalQueue, the unqueued
// selector) read the cluster or Kueue's Configuration and stay the webhook's.

// The twins' parameters the chart computes from config.defaulting.
const (
	// AnnotationDefaultsParam is true unless defaulting.missingLocalQueue is
	// ignore: then whether the annotation's LocalQueue exists decides, which
	// only the webhook's cache knows, so the twins leave it to the webhook.
	AnnotationDefaultsParam = "annotationDefaults"
	// BackstopDeniesParam is true when defaulting.backstop is deny.
	BackstopDeniesParam = "backstopDenies"
)

// TwinCovers reports whether the queue twins and the default-queue twin cover
// a kind: its queue label is the object's own metadata.labels (not a
// CronJob's job template, not a label a pod-based kind may keep in its
// templates, which CEL cannot walk as the webhook does).
func TwinCovers(in *integrations.Integration) bool {
	return slices.Equal(in.LabelsPath(), ownLabels) && !in.TemplateQueue
}

// ownLabelKinds are the kinds TwinCovers, by kindKey.
func ownLabelKinds() []string {
	var out []string
	for _, in := range integrations.All() {
		if TwinCovers(in) {
			out = append(out, kindKey(in))
		}
	}
	return out
}

// ownLabels is where the kinds TwinCovers keep their queue label.
var ownLabels = []string{"metadata", "labels"}

// ignoredCEL is kueueIgnores' request-only half: a RayJob on an existing
// cluster, which Kueue leaves alone whatever its queue.
func ignoredCEL() string {
	var kinds []string
	for _, in := range integrations.Ignorables() {
		kinds = append(kinds, kindKey(in))
	}
	return "(variables.key in " + trust.CELList(kinds) + ") && " + onExistingClusterCEL
}

// topVariable is true unless the request is a trusted controller's part of
// another workload (the webhooks' match condition skips those) or in an
// exempt namespace: the requests the webhook judges whoever sends them.
func topVariables() []admissionregistrationv1.Variable {
	return append(judgedVariables(),
		admissionregistrationv1.Variable{Name: "top", Expression: "!(" + trust.OwnerCEL() + " && variables." + TrustedRequesterParam +
			") && !(request.namespace in variables." + ExemptNamespacesParam + ")"})
}

// queueVariables are the workload's queue before and after, the covered kinds,
// and whether the namespace owes its workloads a queue by its annotation.
func queueVariables(update bool) []admissionregistrationv1.Variable {
	vars := []admissionregistrationv1.Variable{
		{Name: AnnotationDefaultsParam, Expression: ParamPlaceholder(AnnotationDefaultsParam)},
		{Name: "covered", Expression: "variables.key in " + trust.CELList(ownLabelKinds())},
		{Name: "queue", Expression: labelAtCEL("object", ownLabels, integrations.QueueNameLabel)},
		{Name: "owed", Expression: "variables." + AnnotationDefaultsParam + " && " +
			namespaceAnnotationCEL(DefaultQueueAnnotation) + " != '' && !(" + ignoredCEL() + ")"},
	}
	if update {
		vars = append(vars, admissionregistrationv1.Variable{Name: "oldQueue", Expression: labelAtCEL("oldObject", ownLabels, integrations.QueueNameLabel)})
	}
	return vars
}

// owedCovers is what the twins that need "must this namespace be queued" cover.
const owedCovers = "namespaces whose kueue-guard.io/default-queue annotation owes a queue (not Kueue's default " +
	"LocalQueue, the defaulting rules or the unqueued selector); kinds labelled in their own metadata"

// queueTwin is the frame every queue twin shares.
func queueTwin(name, covers string, params []string, ops []admissionregistrationv1.OperationType,
	vars []admissionregistrationv1.Variable, expr, id, message string) *CELTwin {
	return &CELTwin{
		Name:             name,
		Covers:           covers,
		ValuesKey:        WorkloadTwinsValuesKey,
		Params:           append([]string{TrustedRequesterParam, ExemptNamespacesParam, AnnotationDefaultsParam}, params...),
		MatchConstraints: workloadMatch(ops...),
		Variables:        vars,
		Validations: []admissionregistrationv1.Validation{{
			Expression:        expr,
			Reason:            ptr.To(metav1.StatusReasonForbidden),
			MessageExpression: `"[` + id + `] " + ` + message,
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
	}
}

// queueLabelRemovedCEL is QueueRetention's first half: an untrusted update
// that removes the queue label in a namespace that owes one.
func queueLabelRemovedCEL() *CELTwin {
	vars := append(judgedVariables(), queueVariables(true)...)
	return queueTwin("queue-retention", owedCovers, nil, []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, vars,
		"!variables.judged || !variables.covered || !variables.owed || variables.oldQueue == '' || variables.queue != ''",
		RuleNamespace+".queue_label_removed",
		`"`+integrations.QueueNameLabel+` cannot be removed (was \"" + variables.oldQueue + "\") in namespace \"" + `+
			`request.namespace + "\", where workloads must be queued: `+msgOnlyTrustedMayDequeue+
			`; to move the workload, set another LocalQueue while it is suspended"`)
}

// resumeWithoutQueueCEL is QueueRetention's second half: an untrusted update
// that resumes a workload without a queue (and had none) in such a namespace.
func resumeWithoutQueueCEL() *CELTwin {
	vars := append(append(judgedVariables(), queueVariables(true)...),
		admissionregistrationv1.Variable{Name: "resumes", Expression: resumesCEL(false)})
	return queueTwin("resume-guard", owedCovers, nil, []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, vars,
		"!variables.judged || !variables.covered || !variables.owed || variables.oldQueue != '' || variables.queue != '' || !variables.resumes",
		RuleNamespace+".resume_without_queue",
		`request.kind.kind + " \"" + object.metadata.name + "\" has no `+integrations.QueueNameLabel+
			` and cannot be resumed in namespace \"" + request.namespace + "\", where workloads must be queued: set `+
			integrations.QueueNameLabel+` to a LocalQueue and let Kueue admit it"`)
}

// defaultingBackstopCEL is the Backstop's first half: a new workload without
// a queue in a namespace whose annotation gives it one. Where the API server
// runs the default-queue MutatingAdmissionPolicy (1.36 and later) it labels
// such a workload first and this never fires; on older clusters it refuses
// what the failed-open mutating webhook did not label.
func defaultingBackstopCEL() *CELTwin {
	vars := append(append(topVariables(), queueVariables(false)...),
		admissionregistrationv1.Variable{Name: BackstopDeniesParam, Expression: ParamPlaceholder(BackstopDeniesParam)})
	return queueTwin("defaulting-backstop", owedCovers, []string{BackstopDeniesParam}, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, vars,
		"!variables."+BackstopDeniesParam+" || !variables.top || !variables.covered || !variables.owed || variables.queue != ''",
		RuleNamespace+".defaulting_backstop",
		`request.kind.kind + " has no `+integrations.QueueNameLabel+` although namespace \"" + request.namespace + `+
			`"\"'s workloads get LocalQueue \"" + `+namespaceAnnotationCEL(DefaultQueueAnnotation)+` + "\" (`+
			SourceNamespaceAnnotation+`): queue defaulting did not run; retry, or set the label yourself"`)
}

// immutableQueueNameCEL is QueueImmutability: the queue of a workload that
// is not suspended does not change, whoever asks (Kueue's own webhooks refuse
// it too), unless the kind's queue may always change.
func immutableQueueNameCEL() *CELTwin {
	mayChange := perKindCEL(func(in *integrations.Integration) (string, bool) {
		s := in.Suspension
		switch {
		case s.QueueMutable:
			return "true", true
		case s.QueueImmutable:
			return "false", true
		case s.Field != nil:
			return trueAt("object", s.Field), true
		case s.SchedulingGate != "":
			// Kueue counts a terminated Pod as suspended too.
			return "(" + gatedCEL("object", s.SchedulingGate) +
				" || (has(object.status) && has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']))", true
		}
		return "", false // pod-based kinds: their queue is read from templates, not covered
	}, "false")
	vars := append(append(topVariables(), queueVariables(true)...),
		admissionregistrationv1.Variable{Name: "mayChange", Expression: mayChange})
	const covers = "kinds labelled in their own metadata (not a CronJob's job template, not a pod-based kind's templates)"
	return queueTwin("queue-immutability", covers, nil, []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, vars,
		"!variables.top || !variables.covered || variables.oldQueue == variables.queue || variables.mayChange",
		RuleNamespace+".immutable_queue_name",
		`"`+integrations.QueueNameLabel+` cannot be " + (variables.queue == '' ? "removed (was \"" + variables.oldQueue + "\")" : `+
			`variables.oldQueue == '' ? "added (\"" + variables.queue + "\")" : `+
			`"changed from \"" + variables.oldQueue + "\" to \"" + variables.queue + "\"") + " while the workload is running"`)
}

// resumesCEL is workload.Resumes over oldObject and object, per catalog kind:
// its suspend field goes from true to false, or Kueue's gate is removed. With
// spareIgnorable, a kind Kueue may ignore does not resume while it is.
func resumesCEL(spareIgnorable bool) string {
	return perKindCEL(func(in *integrations.Integration) (string, bool) {
		s := in.Suspension
		var resumes string
		switch {
		case s.Field != nil:
			resumes = trueAt("oldObject", s.Field) + " && !" + trueAt("object", s.Field)
		case s.SchedulingGate != "":
			resumes = gatedCEL("oldObject", s.SchedulingGate) + " && !" + gatedCEL("object", s.SchedulingGate)
		default:
			return "", false
		}
		if spareIgnorable && in.Ignorable {
			resumes += " && !(" + onExistingClusterCEL + ")"
		}
		return "(" + resumes + ")", true
	}, "false")
}
