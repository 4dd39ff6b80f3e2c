package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// Annotations kueue-guard reads on a Namespace and writes on a defaulted object.
const (
	// DefaultQueueAnnotation on a Namespace names the LocalQueue its workloads go to.
	DefaultQueueAnnotation = "kueue-guard.io/default-queue"
	// DefaultPriorityClassAnnotation on a Namespace names the WorkloadPriorityClass
	// its workloads get.
	DefaultPriorityClassAnnotation = "kueue-guard.io/default-priority-class"
	// DefaultedByAnnotation on a workload records where its queue came from.
	DefaultedByAnnotation = "kueue-guard.io/defaulted-by"
	// KueueDefaultLocalQueue is the LocalQueue name Kueue itself defaults to.
	KueueDefaultLocalQueue = "default"
)

// Where a default queue came from, as written in DefaultedByAnnotation.
const (
	SourceNamespaceAnnotation = "namespace-annotation"
	SourceRulePrefix          = "rule/"
	SourceKueueDefault        = "kueue-default-localqueue"
)

// RuleMissingLocalQueue is checked by the queue checks (and reported by
// defaulting for the queue it chose).
var RuleMissingLocalQueue = Register(Rule{
	ID:    RuleNamespace + ".missing_local_queue",
	Title: "LocalQueue exists",
	Doc: "A workload's LocalQueue (set, or chosen by queue defaulting) must exist in its namespace; " +
		"otherwise the workload stays pending. Enforced per defaulting.missingLocalQueue (warn, deny, ignore).",
	Enforcement: EnforcementWarn,
	Check:       queueChecksName,
	WebhookOnly: "it reads whether the LocalQueue exists (the informer cache)",
})

// RuleQueuesUnknown is reported instead of RuleMissingLocalQueue while
// kueue-guard cannot read Kueue's queues at all: Kueue's CRDs are not installed
// (Kueue installed after kueue-guard, or being reinstalled) or do not serve the
// version kueue-guard reads. The workload is admitted unchecked rather than
// refused: kueue-guard must not hold the cluster down while Kueue is away.
var RuleQueuesUnknown = Register(Rule{
	ID:    RuleNamespace + ".queues_unknown",
	Title: "Kueue's queues are readable",
	Doc: "Reported while kueue-guard cannot read Kueue's LocalQueues and ClusterQueues (Kueue's CRDs are missing or " +
		"serve another version): the workload's queue is not checked, and queue defaulting does not fall back to " +
		"Kueue's default LocalQueue. Counted by kueue_guard_violations_total{rule=\"kueue_guard.queues_unknown\"}; " +
		"kueue_guard_kueue_api_served is 0 meanwhile.",
	Enforcement: EnforcementWarn,
	Check:       queueChecksName,
	WebhookOnly: "it reads whether Kueue's API is served (the informer cache)",
})

// QueuesUnknownWarning is the warning for a queue that cannot be looked up.
func QueuesUnknownWarning(queue, namespace string) string {
	return fmt.Sprintf("kueue-guard cannot read Kueue's queues (Kueue's %s API is not served): LocalQueue %q in namespace %q was not checked",
		kueue.SchemeGroupVersion, queue, namespace)
}

// QueueChoice is a defaulted queue and why it was chosen.
type QueueChoice struct {
	LocalQueue    string
	PriorityClass string
	// Source is the DefaultedByAnnotation value.
	Source string
	// Exists reports whether the LocalQueue exists in the namespace.
	Exists bool
}

type compiledRule struct {
	rule     config.DefaultingRule
	selector labels.Selector
}

// QueueResolver chooses a namespace's default queue for a workload. It is shared by
// the defaulting step, the guards (which must know whether a workload would get a
// queue) and the reviewer's explanations.
type QueueResolver struct {
	rules []compiledRule
}

// NewQueueResolver compiles the configuration's rules once.
func NewQueueResolver(cfg *config.Configuration) (*QueueResolver, error) {
	r := &QueueResolver{}
	for i, rule := range cfg.Defaulting.Rules {
		sel, err := rule.Selector()
		if err != nil {
			return nil, fmt.Errorf("defaulting.rules[%d].namespaceSelector: %w", i, err)
		}
		r.rules = append(r.rules, compiledRule{rule: rule, selector: sel})
	}
	return r, nil
}

// Resolve returns the queue a workload without one would get in a namespace, in
// order: the namespace annotation; the first matching configuration rule; Kueue's
// own LocalQueue named "default". It returns nil when nothing applies.
func (r *QueueResolver) Resolve(namespace string, obj workloadObject, view cluster.View) *QueueChoice {
	ns, _ := view.Namespace(namespace)
	var nsLabels labels.Set
	var priority string
	if ns != nil {
		nsLabels = ns.Labels
		priority = ns.Annotations[DefaultPriorityClassAnnotation]
		if q := ns.Annotations[DefaultQueueAnnotation]; q != "" {
			return r.choice(namespace, q, priority, SourceNamespaceAnnotation, view)
		}
	}
	for _, cr := range r.rules {
		if ns == nil || !cr.selector.Matches(nsLabels) {
			continue
		}
		if cr.rule.RequestsResource != "" && !obj.requests(corev1.ResourceName(cr.rule.RequestsResource)) {
			continue
		}
		if cr.rule.PriorityClass != "" {
			priority = cr.rule.PriorityClass
		}
		return r.choice(namespace, cr.rule.LocalQueue, priority, SourceRulePrefix+cr.rule.Name, view)
	}
	if _, ok := view.LocalQueue(namespace, KueueDefaultLocalQueue); ok {
		return &QueueChoice{LocalQueue: KueueDefaultLocalQueue, PriorityClass: priority, Source: SourceKueueDefault, Exists: true}
	}
	if view.KueueDefaultQueueRemembered(namespace) {
		// Kueue's API is away (uninstalled, reinstalling): the namespace is
		// still owed the queue it had, and waits for it.
		return &QueueChoice{LocalQueue: KueueDefaultLocalQueue, PriorityClass: priority, Source: SourceKueueDefault}
	}
	return nil
}

// DefaultPriorityClass is the namespace's default WorkloadPriorityClass, or "".
func DefaultPriorityClass(namespace string, view cluster.View) string {
	if ns, ok := view.Namespace(namespace); ok {
		return ns.Annotations[DefaultPriorityClassAnnotation]
	}
	return ""
}

func (r *QueueResolver) choice(namespace, queue, priority, source string, view cluster.View) *QueueChoice {
	_, exists := view.LocalQueue(namespace, queue)
	return &QueueChoice{LocalQueue: queue, PriorityClass: priority, Source: source, Exists: exists}
}

// workloadObject lets the resolver ask about resources lazily: most namespaces
// never reach a resource rule, so the object is not walked for them.
type workloadObject interface {
	requests(name corev1.ResourceName) bool
}

type unstructuredWorkload struct{ req *Request }

func (w unstructuredWorkload) requests(name corev1.ResourceName) bool {
	return workload.RequestsResource(w.req.Object, name)
}

// Defaulter is the mutating step that sets a workload's queue and priority class.
type Defaulter struct {
	resolver *QueueResolver
	missing  config.MissingLocalQueueAction
}

var _ Step = (*Defaulter)(nil)

// NewDefaulter builds the defaulting step.
func NewDefaulter(resolver *QueueResolver, missing config.MissingLocalQueueAction) *Defaulter {
	return &Defaulter{resolver: resolver, missing: missing}
}

// Name implements Step.
func (*Defaulter) Name() string { return "queue-defaulting" }

// QueueLabelField is the field path of a kind's queue label, for violations.
func QueueLabelField(in *integrations.Integration) *field.Path {
	return field.NewPath(in.LabelsPath()[0], in.LabelsPath()[1:]...).Key(integrations.QueueNameLabel)
}

// Handles implements Step: defaulting happens at creation only.
func (*Defaulter) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Settled implements Settler: with the queue label set at the kind's own place,
// Mutate only adds the namespace's default priority class where none is set.
func (s *Defaulter) Settled(namespace string, _ *integrations.Integration, own map[string]string, view cluster.View) bool {
	if own[integrations.QueueNameLabel] == "" {
		return false
	}
	return own[integrations.PriorityClassLabel] != "" || DefaultPriorityClass(namespace, view) == ""
}

// Mutate implements MutationStep. It acts on a top-level workload only (the
// pipeline decides which are), never overwrites a queue the user set, and is
// idempotent: on reinvocation the label is already there and nothing changes.
func (s *Defaulter) Mutate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	in := t.Integration
	queue := workload.QueueName(req.Object, in)
	priority := ""
	if queue == "" {
		choice := s.resolver.Resolve(req.Namespace, unstructuredWorkload{req}, view)
		if choice == nil {
			return nil
		}
		if why := kueueIgnores(req.Object, req.Namespace, in, view); why != "" {
			d.Warn(RuleKueueUnmanaged, nil, fmt.Sprintf("%s: the namespace's default LocalQueue %q (from %s) was not set",
				why, choice.LocalQueue, choice.Source))
			return nil
		}
		if !choice.Exists && !view.QueuesKnown() {
			d.Warn(RuleQueuesUnknown, QueueLabelField(in), QueuesUnknownWarning(choice.LocalQueue, req.Namespace))
		} else if !choice.Exists {
			switch s.missing {
			case config.MissingLocalQueueIgnore:
				return nil
			case config.MissingLocalQueueDeny:
				d.Deny(RuleMissingLocalQueue, QueueLabelField(in), fmt.Sprintf(
					"default LocalQueue %q (from %s) does not exist in namespace %q: ask an admin to create it, or set %s",
					choice.LocalQueue, choice.Source, req.Namespace, integrations.QueueNameLabel))
				return nil
			default:
				d.Warn(RuleMissingLocalQueue, QueueLabelField(in), MissingQueueWarning(choice.LocalQueue, req.Namespace))
			}
		}
		obj := req.writable()
		ops, err := workload.SetLabel(obj, in, integrations.QueueNameLabel, choice.LocalQueue)
		if err != nil {
			return fmt.Errorf("setting %s: %w", integrations.QueueNameLabel, err)
		}
		d.Patch = append(d.Patch, ops...)
		// A template label of a kind whose own label Kueue reads would now
		// disagree with the defaulted queue: the defaulted one wins.
		d.Patch = append(d.Patch, workload.AlignNestedLabels(obj, in, integrations.QueueNameLabel, choice.LocalQueue)...)
		if ops, err = workload.SetAnnotation(obj, in, DefaultedByAnnotation, choice.Source); err != nil {
			return fmt.Errorf("setting %s: %w", DefaultedByAnnotation, err)
		}
		d.Patch = append(d.Patch, ops...)
		d.Defaulted = choice
		d.Annotate("queue-name", choice.LocalQueue+" ("+choice.Source+")")
		priority = choice.PriorityClass
	} else {
		priority = DefaultPriorityClass(req.Namespace, view)
	}
	if priority != "" && workload.PriorityClass(req.Object, in) == "" {
		obj := req.writable()
		ops, err := workload.SetLabel(obj, in, integrations.PriorityClassLabel, priority)
		if err != nil {
			return fmt.Errorf("setting %s: %w", integrations.PriorityClassLabel, err)
		}
		d.Patch = append(d.Patch, ops...)
		d.Patch = append(d.Patch, workload.AlignNestedLabels(obj, in, integrations.PriorityClassLabel, priority)...)
	}
	return nil
}
