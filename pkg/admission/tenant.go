package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

const (
	queueRetentionName   = "queue-retention"
	labelConsistencyName = "label-consistency"
	backstopName         = "defaulting-backstop"
	podGroupResizeName   = "pod-group-resize"
	ownerGuardName       = "owner-guard"
)

// The rules of the guards that keep a tenant's workload in its queue.
var (
	RuleQueueLabelRemoved = Register(Rule{
		ID:    RuleNamespace + ".queue_label_removed",
		Title: "A queued workload stays queued",
		Doc: "In a namespace whose workloads must be queued (defaulting gives them a queue, or " +
			"defaulting.unqueued.action is deny), only trusted controllers may remove kueue.x-k8s.io/queue-name (UPDATE only).",
		Enforcement: EnforcementDeny,
		Check:       queueRetentionName,
		CEL:         queueLabelRemovedCEL(),
	})
	RuleResumeWithoutQueue = Register(Rule{
		ID:    RuleNamespace + ".resume_without_queue",
		Title: "No resume without a queue",
		Doc: "In a namespace whose workloads must be queued, only trusted controllers may resume (spec.suspend " +
			"true to false, or Kueue's scheduling gate removed) a workload that has no queue (UPDATE only).",
		Enforcement: EnforcementDeny,
		Check:       queueRetentionName,
		CEL:         resumeWithoutQueueCEL(),
	})
	RuleLabelMismatch = Register(Rule{
		ID:    RuleNamespace + ".label_mismatch",
		Title: "Template labels agree with the workload's",
		Doc: "A queue-name or priority-class label in a pod template (or any nested template) must equal " +
			"the workload's own: Kueue and the pods it admits read those places too.",
		Enforcement: EnforcementDeny,
		Check:       labelConsistencyName,
		CEL:         labelMismatchCEL(),
	})
	RuleDefaultingBackstop = Register(Rule{
		ID:    RuleNamespace + ".defaulting_backstop",
		Title: "Defaulting ran",
		Doc: "A new workload without a queue in a namespace where queue defaulting would give it one: the " +
			"mutating webhook did not run. Enforced per defaulting.backstop (deny, warn, off).",
		Enforcement: EnforcementDeny,
		Check:       backstopName,
		CEL:         defaultingBackstopCEL(),
	})
	RuleUnqueuedWorkload = Register(Rule{
		ID:    RuleNamespace + ".unqueued_workload",
		Title: "Workload has a queue",
		Doc: "A new workload for which no source yields a queue would run outside Kueue. Enforced per " +
			"defaulting.unqueued (allow, warn, deny) in the namespaces its selector matches.",
		Enforcement: EnforcementWarn,
		Check:       backstopName,
		WebhookOnly: "it reads Kueue's manageJobsWithoutQueueName and managedJobsNamespaceSelector (Kueue's Configuration)",
	})
	RulePodGroupResize = Register(Rule{
		ID:    RuleNamespace + ".pod_group_resize",
		Title: "A queued pod group keeps its size",
		Doc: "A queued StatefulSet is admitted as one pod group of fixed size: it may be scaled to 0 and " +
			"back, not between two sizes (UPDATE and the scale subresource).",
		Enforcement: EnforcementDeny,
		Check:       podGroupResizeName,
		WebhookOnly: "it reads the workload a scale request resizes (the informer cache); Kueue's own webhook refuses " +
			"the same update",
	})
	RuleUntrustedOwner = Register(Rule{
		ID:    untrustedOwnerID,
		Title: "Only a workload's controller creates its parts",
		Doc: "An object whose controller owner is a kind Kueue manages (its frameworks and externalFrameworks), or a " +
			"ReplicaSet (Kueue walks through one to its owner), from a requester that is not in trust.controllers, is " +
			"denied, and so is such a requester's ReplicaSet owned by a kind Kueue manages: Kueue would count it as part " +
			"of the owner and never queue it.",
		Enforcement: EnforcementDeny,
		Check:       ownerGuardName,
		CEL:         untrustedOwnerCEL(),
	})
)

const msgOnlyTrustedMayDequeue = "only Kueue and the cluster's controllers may take a workload out of its queue"

// QueuePolicy answers, for one namespace, whether its workloads must be queued:
// defaulting gives them a queue there, or the configuration's unqueued action is
// deny there. The guards below only hold tenants to a queue where one is owed.
type QueuePolicy struct {
	resolver *QueueResolver
	missing  config.MissingLocalQueueAction
	backstop config.BackstopAction
	unqueued config.UnqueuedAction
	selector labels.Selector
}

// NewQueuePolicy compiles the defaulting configuration once.
func NewQueuePolicy(cfg *config.Configuration, resolver *QueueResolver) (*QueuePolicy, error) {
	sel, err := cfg.Defaulting.Unqueued.Selector()
	if err != nil {
		return nil, fmt.Errorf("defaulting.unqueued.namespaceSelector: %w", err)
	}
	return &QueuePolicy{resolver: resolver, missing: cfg.Defaulting.MissingLocalQueue, backstop: cfg.Defaulting.Backstop,
		unqueued: cfg.Defaulting.Unqueued.Action, selector: sel}, nil
}

// wouldDefault is the choice the defaulting step would make for a workload
// without a queue, or nil when it would leave it unlabeled.
func (q *QueuePolicy) wouldDefault(req *Request, view cluster.View) *QueueChoice {
	c := q.resolver.Resolve(req.Namespace, unstructuredWorkload{req}, view)
	if c == nil || (!c.Exists && q.missing == config.MissingLocalQueueIgnore) {
		return nil
	}
	if in, ok := integrations.Lookup(req.Kind.GroupKind()); ok && kueueIgnores(req.Object, req.Namespace, in, view) != "" {
		return nil
	}
	return c
}

// unqueuedAction is the configured action for an unqueued workload in the
// namespace.
func (q *QueuePolicy) unqueuedAction(namespace string, view cluster.View) config.UnqueuedAction {
	if q.unqueued == config.UnqueuedAllow {
		return config.UnqueuedAllow
	}
	ns, ok := view.Namespace(namespace)
	var nsLabels labels.Set
	if ok {
		nsLabels = ns.Labels
	}
	if !q.selector.Matches(nsLabels) {
		return config.UnqueuedAllow
	}
	return q.unqueued
}

// owed reports whether workloads in the request's namespace must carry a queue.
func (q *QueuePolicy) owed(req *Request, view cluster.View) bool {
	return q.wouldDefault(req, view) != nil || q.unqueuedAction(req.Namespace, view) == config.UnqueuedDeny
}

// QueueRetention keeps a queued workload queued: in a namespace where workloads
// owe a queue, nobody but a trusted controller may remove the queue label (even
// while the workload is suspended, when Kueue itself allows it), or resume a
// workload that has no queue. Without it a tenant drops the label of a suspended
// Job, then sets spec.suspend to false, and the Job runs outside quota.
type QueueRetention struct {
	policy *QueuePolicy
}

var _ Step = (*QueueRetention)(nil)

// NewQueueRetention builds the step.
func NewQueueRetention(policy *QueuePolicy) *QueueRetention { return &QueueRetention{policy: policy} }

// Name implements Step.
func (*QueueRetention) Name() string { return queueRetentionName }

// Handles implements Step.
func (*QueueRetention) Handles(op admissionv1.Operation) bool { return op == admissionv1.Update }

// Validate implements ValidationStep.
func (s *QueueRetention) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if req.OldObject == nil || t.TrustedController {
		return nil
	}
	in := t.Integration
	oldQ, newQ := workload.QueueName(req.OldObject, in), workload.QueueName(req.Object, in)
	if newQ != "" {
		return nil
	}
	removed := oldQ != ""
	resumed := workload.Resumes(in, req.OldObject, req.Object)
	if !removed && !resumed {
		return nil
	}
	if !s.policy.owed(req, view) {
		return nil
	}
	lbl := QueueLabelField(in)
	if removed {
		d.Deny(RuleQueueLabelRemoved, lbl, fmt.Sprintf(
			"%s cannot be removed (was %q) in namespace %q, where workloads must be queued: %s; "+
				"to move the workload, set another LocalQueue while it is suspended", integrations.QueueNameLabel, oldQ,
			req.Namespace, msgOnlyTrustedMayDequeue))
		return nil
	}
	d.Deny(RuleResumeWithoutQueue, resumeField(in), fmt.Sprintf(
		"%s %q has no %s and cannot be resumed in namespace %q, where workloads must be queued: "+
			"set %s to a LocalQueue and let Kueue admit it", in.GVK.Kind, req.Name, integrations.QueueNameLabel,
		req.Namespace, integrations.QueueNameLabel))
	return nil
}

func resumeField(in *integrations.Integration) *field.Path {
	if f := in.Suspension.Field; f != nil {
		return field.NewPath(f[0], f[1:]...)
	}
	return field.NewPath("spec", "schedulingGates")
}

// LabelConsistency denies a workload whose queue or priority label in a pod
// template (or any nested template) differs from the workload's own: Kueue and
// the pods it admits read those places, so a template label is a second,
// unjudged queue. Updates by trusted controllers are not checked: Kueue writes
// the labels it propagates itself.
type LabelConsistency struct{}

var _ Step = LabelConsistency{}

// Name implements Step.
func (LabelConsistency) Name() string { return labelConsistencyName }

// Handles implements Step.
func (LabelConsistency) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep.
func (LabelConsistency) Validate(_ context.Context, req *Request, t Target, _ cluster.View, d *Decision) error {
	if t.TrustedController {
		return nil
	}
	in := t.Integration
	sites := workload.NestedLabelSites(req.Object, in, integrations.QueueNameLabel, integrations.PriorityClassLabel)
	if len(sites) == 0 {
		return nil
	}
	want := map[string]string{}
	for _, key := range []string{integrations.QueueNameLabel, integrations.PriorityClassLabel} {
		want[key] = workload.EffectiveLabel(req.Object, in, key)
	}
	for _, site := range sites {
		if site.Value == want[site.Key] {
			continue
		}
		d.Deny(RuleLabelMismatch, site.Field(), fmt.Sprintf(
			"%s is %q here but %q on the %s itself: Kueue would act on both; remove it here or set the same value",
			site.Key, site.Value, want[site.Key], in.GVK.Kind))
	}
	return nil
}

// Backstop catches, on the validating path, a new workload without a queue that
// the mutating webhook would have labeled. That webhook fails open (it must not
// stop workloads while it is down), so during its outage or rollout, or when a
// request reaches the API server around it, the workload would otherwise be
// created unqueued. The same step applies defaulting.unqueued to workloads that
// no source gives a queue.
type Backstop struct {
	policy *QueuePolicy
}

var _ Step = (*Backstop)(nil)

// NewBackstop builds the step.
func NewBackstop(policy *QueuePolicy) *Backstop { return &Backstop{policy: policy} }

// Name implements Step.
func (*Backstop) Name() string { return backstopName }

// Handles implements Step: the backstop judges creations only.
func (*Backstop) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Validate implements ValidationStep.
func (s *Backstop) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	in := t.Integration
	if workload.QueueName(req.Object, in) != "" {
		return nil
	}
	lbl := QueueLabelField(in)
	if c := s.policy.wouldDefault(req, view); c != nil {
		msg := fmt.Sprintf("%s has no %s although namespace %q's workloads get LocalQueue %q (%s): "+
			"queue defaulting did not run; retry, or set the label yourself", in.GVK.Kind, integrations.QueueNameLabel,
			req.Namespace, c.LocalQueue, c.Source)
		switch s.policy.backstop {
		case config.BackstopDeny:
			d.Deny(RuleDefaultingBackstop, lbl, msg)
		case config.BackstopWarn:
			d.Warn(RuleDefaultingBackstop, lbl, fmt.Sprintf("no %s: queue defaulting did not run, so Kueue will not manage it", integrations.QueueNameLabel))
		}
		return nil
	}
	action := s.policy.unqueuedAction(req.Namespace, view)
	if action != config.UnqueuedAllow && kueueHoldsUnqueued(req.Namespace, view) {
		// Kueue's manageJobsWithoutQueueName: it suspends the workload itself and
		// admits nothing without a queue, so nothing runs outside quota.
		d.Warn(RuleUnqueuedWorkload, lbl, fmt.Sprintf("no %s: Kueue holds it (manageJobsWithoutQueueName) and admits it only once it has a queue",
			integrations.QueueNameLabel))
		return nil
	}
	if why := kueueIgnores(req.Object, req.Namespace, in, view); why != "" && action == config.UnqueuedDeny {
		// Not a missing queue: Kueue would ignore the workload whatever its
		// queue, so no label makes it admissible here.
		d.Deny(RuleUnqueuedWorkload, lbl, fmt.Sprintf("%s, so it would run outside quota, and workloads in namespace %q must not", why, req.Namespace))
		return nil
	}
	switch action {
	case config.UnqueuedDeny:
		d.Deny(RuleUnqueuedWorkload, lbl, fmt.Sprintf(
			"%s has no %s and namespace %q has no default queue: Kueue would not manage it, so it would run outside quota; "+
				"set %s to one of the namespace's LocalQueues", in.GVK.Kind, integrations.QueueNameLabel, req.Namespace,
			integrations.QueueNameLabel))
	case config.UnqueuedWarn:
		d.Warn(RuleUnqueuedWorkload, lbl, fmt.Sprintf("no %s: Kueue will not manage it, so it runs outside quota", integrations.QueueNameLabel))
	}
	return nil
}

// PodGroupResize denies resizing a queued StatefulSet between two non-zero
// sizes: Kueue admits it as one pod group whose size is fixed at admission, and
// refuses such an update itself, but its webhook does not see the scale
// subresource, so `kubectl scale` would grow an admitted group past its quota.
// Scaling to zero and back is allowed (Kueue admits the new size as a new
// workload). Trusted controllers are not judged.
type PodGroupResize struct{}

var _ Step = PodGroupResize{}

// Name implements Step.
func (PodGroupResize) Name() string { return podGroupResizeName }

// Handles implements Step.
func (PodGroupResize) Handles(op admissionv1.Operation) bool { return op == admissionv1.Update }

// Validate implements ValidationStep.
func (PodGroupResize) Validate(_ context.Context, req *Request, t Target, _ cluster.View, d *Decision) error {
	in := t.Integration
	if req.OldObject == nil || t.TrustedController ||
		in.GVK.Group != "apps" || in.GVK.Kind != "StatefulSet" || workload.QueueName(req.OldObject, in) == "" {
		return nil
	}
	oldN, newN := replicas(req.OldObject), replicas(req.Object)
	if oldN == newN || oldN == 0 || newN == 0 {
		return nil
	}
	d.Deny(RulePodGroupResize, field.NewPath("spec", "replicas"), fmt.Sprintf(
		"StatefulSet %q is queued as one pod group of %d: Kueue cannot resize it to %d; scale it to 0 first, then to %d",
		req.Name, oldN, newN, newN))
	return nil
}

// replicas reads spec.replicas with the API server's default of 1.
func replicas(obj *unstructured.Unstructured) int64 {
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil || !found {
		return 1
	}
	return n
}

// OwnerGuard denies an object whose controller owner Kueue would take it as
// part of (ownerRole) when the requester is not a trusted controller. Kueue
// neither suspends nor gates such an object, whatever its queue label, so a
// tenant who names their own small queued Job as the owner of a big one, or a
// ReplicaSet under it, would run the big one outside quota. Only the owner's
// controller creates its parts, and its requests never reach this step (the
// pipeline and the match condition leave them out).
type OwnerGuard struct{}

var _ Step = OwnerGuard{}

// Name implements Step.
func (OwnerGuard) Name() string { return ownerGuardName }

// Handles implements Step.
func (OwnerGuard) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep.
func (OwnerGuard) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if t.TrustedController {
		return nil
	}
	if msg := ownerDenial(req, t.Integration.GVK.Kind, view); msg != "" {
		d.Deny(RuleUntrustedOwner, field.NewPath("metadata", "ownerReferences"), msg)
	}
	return nil
}
