package admission

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

const (
	integrationGuardName  = "integration-guard"
	queueChecksName       = "queue-checks"
	queueImmutabilityName = "queue-immutability"
)

// The workload guards' rules.
var (
	RuleUnsupportedIntegration = Register(Rule{
		ID:    RuleNamespace + ".unsupported_integration",
		Title: "Kueue manages the workload's kind",
		Doc: "A queued workload of a kind whose Kueue integration the install does not enable would run " +
			"outside quota (integrations.action).",
		Enforcement: EnforcementDeny,
		Check:       integrationGuardName,
		CEL:         unsupportedIntegrationCEL(),
	})
	RuleQueueOnHold = Register(Rule{
		ID:          RuleNamespace + ".queue_on_hold",
		Title:       "Queue is not on hold",
		Doc:         "The workload's LocalQueue or ClusterQueue has a stopPolicy that holds it: nothing is admitted until it resumes.",
		Enforcement: EnforcementWarn,
		Check:       queueChecksName,
		WebhookOnly: "it reads the queues' stopPolicy (the informer cache)",
	})
	RuleImmutableQueueName = Register(Rule{
		ID:          RuleNamespace + ".immutable_queue_name",
		Title:       "Queue of a running workload is immutable",
		Doc:         "kueue.x-k8s.io/queue-name cannot change while the workload is running (UPDATE only).",
		Enforcement: EnforcementDeny,
		Check:       queueImmutabilityName,
		CEL:         immutableQueueNameCEL(),
	})
)

// effectiveQueue is the queue a workload has, or on CREATE the one defaulting
// would give it (when our mutating webhook did not run, e.g. it was down), and
// whether it came from defaulting.
func effectiveQueue(req *Request, t Target, resolver *QueueResolver, view cluster.View) (string, bool) {
	if q := workload.QueueName(req.Object, t.Integration); q != "" {
		return q, false
	}
	if req.Operation != admissionv1.Create || resolver == nil {
		return "", false
	}
	if c := resolver.Resolve(req.Namespace, unstructuredWorkload{req}, view); c != nil {
		return c.LocalQueue, true
	}
	return "", false
}

// IntegrationGuard denies Kueue workloads whose integration the install does not
// support: Kueue would never manage them, so they would run outside quota.
type IntegrationGuard struct {
	profile        config.InstallProfile
	explicit       []string
	action         config.IntegrationAction
	kueueNamespace string
	resolver       *QueueResolver
}

var _ Step = (*IntegrationGuard)(nil)

// NewIntegrationGuard builds the guard from the configuration.
func NewIntegrationGuard(cfg *config.Configuration, resolver *QueueResolver) *IntegrationGuard {
	return &IntegrationGuard{profile: cfg.InstallProfile, explicit: cfg.Integrations.Frameworks,
		action: cfg.Integrations.Action, kueueNamespace: cfg.KueueNamespace, resolver: resolver}
}

// Name implements Step.
func (*IntegrationGuard) Name() string { return integrationGuardName }

// Supported reports whether the install manages the integration, and where that
// answer comes from (for messages). known is false under the oss profile when
// Kueue's Configuration cannot be read: the guard then does not guess.
func (g *IntegrationGuard) Supported(in *integrations.Integration, view cluster.View) (supported, known bool, source string) {
	if g.profile == config.ProfileManaged {
		return in.Managed, true, "the managed Kueue install"
	}
	frameworks, source := g.explicit, "kueue-guard's integrations.frameworks"
	if len(frameworks) == 0 {
		var ok bool
		if frameworks, ok = view.KueueFrameworks(); !ok {
			return true, false, ""
		}
		source = fmt.Sprintf("Kueue's integrations.frameworks (ConfigMap in %s)", g.kueueNamespace)
	}
	return in.EnabledBy(frameworks), true, source
}

// Handles implements Step.
func (*IntegrationGuard) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep. It judges CREATE, and UPDATEs that change
// the queue: every other update of an existing object (its controller removing a
// finalizer, status-like writes) passes, so that an object of an unsupported
// kind can still be cleaned up.
func (g *IntegrationGuard) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if Deleting(req) {
		return nil // Kueue manages nothing being deleted; let its cleanup finish
	}
	if req.Operation == admissionv1.Update && req.OldObject != nil &&
		workload.QueueName(req.OldObject, t.Integration) == workload.QueueName(req.Object, t.Integration) {
		return nil
	}
	if q, _ := effectiveQueue(req, t, g.resolver, view); q == "" {
		return nil // not a Kueue workload: nothing to guard
	}
	if !t.Unintegrated { // the pipeline asked Supported for every step
		return nil
	}
	in := t.Integration
	_, _, source := g.Supported(in, view)
	field := QueueLabelField(in)
	if g.action == config.IntegrationActionWarn {
		d.Warn(RuleUnsupportedIntegration, field, g.Warning(in))
		return nil
	}
	d.Deny(RuleUnsupportedIntegration, field, g.denial(in, source))
	return nil
}

func (g *IntegrationGuard) instead(in *integrations.Integration) string {
	if g.profile == config.ProfileOSS {
		return fmt.Sprintf("ask an admin to enable %q in Kueue's integrations.frameworks", in.EffectiveFramework())
	}
	return "use " + in.Alternative + " instead"
}

func (g *IntegrationGuard) denial(in *integrations.Integration, source string) string {
	verb := "is not supported by " + source
	if g.profile == config.ProfileOSS {
		verb = "is not enabled in " + source
	}
	return fmt.Sprintf("%s (%s) %s: Kueue will not manage it, so it would run outside quota; %s",
		in.GVK.Kind, in.EffectiveFramework(), verb, g.instead(in))
}

// Warning is the warning for a kind the install does not integrate, under
// integrations.action warn: the short form (kubectl warnings should stay under
// 120 characters).
func (g *IntegrationGuard) Warning(in *integrations.Integration) string {
	if g.profile == config.ProfileOSS {
		return fmt.Sprintf("%s is not enabled in Kueue here: it would run outside quota", in.GVK.Kind)
	}
	alt, _, _ := strings.Cut(in.Alternative, " (")
	return fmt.Sprintf("%s is unsupported by managed Kueue: it would run outside quota; use %s", in.GVK.Kind, alt)
}

// Deleting reports an UPDATE of an object the API server has marked for
// deletion: the stored object (the old object) has a deletionTimestamp. Only a
// DELETE sets it; an update cannot, so the requester cannot claim it.
func Deleting(req *Request) bool {
	return req.Operation == admissionv1.Update && req.OldObject != nil && req.OldObject.GetDeletionTimestamp() != nil
}

// QueueChecks warns about a queue that cannot admit the workload: a LocalQueue
// that does not exist (or denies, per configuration), and a queue on hold.
type QueueChecks struct {
	missing config.MissingLocalQueueAction
}

var _ Step = (*QueueChecks)(nil)

// NewQueueChecks builds the step.
func NewQueueChecks(missing config.MissingLocalQueueAction) *QueueChecks {
	return &QueueChecks{missing: missing}
}

// Name implements Step.
func (*QueueChecks) Name() string { return queueChecksName }

// MissingQueueWarning is the warning for a LocalQueue that does not exist; the
// mutating and validating paths share it so a user sees one wording.
func MissingQueueWarning(queue, namespace string) string {
	return fmt.Sprintf("LocalQueue %q not found in namespace %q: the workload stays pending until it exists", queue, namespace)
}

// Handles implements Step.
func (*QueueChecks) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep. On UPDATE it only looks at a queue that
// changed, so a running workload's status updates do not repeat warnings.
func (s *QueueChecks) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	in := t.Integration
	queue := workload.QueueName(req.Object, in)
	if queue == "" || (req.Operation == admissionv1.Update && req.OldObject != nil && workload.QueueName(req.OldObject, in) == queue) {
		return nil
	}
	field := QueueLabelField(in)
	if why := kueueIgnores(req.Object, req.Namespace, in, view); why != "" {
		d.Warn(RuleKueueUnmanaged, field, why+": its queue holds nothing, and it runs outside quota")
		return nil
	}
	lq, ok := view.LocalQueue(req.Namespace, queue)
	if !ok {
		// The mutating path already warned about a queue it defaulted.
		defaulted := req.Operation == admissionv1.Create && defaultedByUs(req, in)
		switch {
		case !view.QueuesKnown():
			if !defaulted {
				d.Warn(RuleQueuesUnknown, field, QueuesUnknownWarning(queue, req.Namespace))
			}
		case s.missing == config.MissingLocalQueueIgnore:
		case s.missing == config.MissingLocalQueueDeny:
			d.Deny(RuleMissingLocalQueue, field, fmt.Sprintf(
				"LocalQueue %q does not exist in namespace %q: use an existing LocalQueue or ask an admin to create it", queue, req.Namespace))
		case !defaulted:
			d.Warn(RuleMissingLocalQueue, field, MissingQueueWarning(queue, req.Namespace))
		}
		return nil
	}
	if cluster.OnHold(lq.Spec.StopPolicy) {
		d.Warn(RuleQueueOnHold, field, fmt.Sprintf("LocalQueue %q is on hold (stopPolicy %s): nothing is admitted until it resumes",
			queue, *lq.Spec.StopPolicy))
		return nil
	}
	if cq, ok := view.ClusterQueue(string(lq.Spec.ClusterQueue)); ok && cluster.OnHold(cq.Spec.StopPolicy) {
		d.Warn(RuleQueueOnHold, field, fmt.Sprintf("ClusterQueue %q is on hold (stopPolicy %s): nothing is admitted until it resumes",
			cq.Name, *cq.Spec.StopPolicy))
	}
	return nil
}

func defaultedByUs(req *Request, in *integrations.Integration) bool {
	m, _ := workload.Annotations(req.Object, in)
	return m[DefaultedByAnnotation] != ""
}

// QueueImmutability denies changing or removing the queue of a workload that is
// not suspended, as Kueue's own webhooks do, so a running job can never escape
// its queue even where Kueue's webhook is not installed for that kind.
type QueueImmutability struct{}

var _ Step = QueueImmutability{}

// Name implements Step.
func (QueueImmutability) Name() string { return queueImmutabilityName }

// Handles implements Step.
func (QueueImmutability) Handles(op admissionv1.Operation) bool { return op == admissionv1.Update }

// Validate implements ValidationStep.
func (QueueImmutability) Validate(_ context.Context, req *Request, t Target, _ cluster.View, d *Decision) error {
	if req.OldObject == nil {
		return nil
	}
	in := t.Integration
	oldQ, newQ := workload.QueueName(req.OldObject, in), workload.QueueName(req.Object, in)
	if oldQ == newQ || workload.QueueMayChange(in, req.OldObject, req.Object) {
		return nil
	}
	what := fmt.Sprintf("changed from %q to %q", oldQ, newQ)
	if newQ == "" {
		what = fmt.Sprintf("removed (was %q)", oldQ)
	} else if oldQ == "" {
		what = fmt.Sprintf("added (%q)", newQ)
	}
	if in.Suspension.QueueImmutable {
		d.Deny(RuleImmutableQueueName, QueueLabelField(in), fmt.Sprintf(
			"%s cannot be %s: Kueue never lets a %s's queue change, running or not; delete and re-create it",
			integrations.QueueNameLabel, what, in.GVK.Kind))
		return nil
	}
	d.Deny(RuleImmutableQueueName, QueueLabelField(in), fmt.Sprintf(
		"%s cannot be %s while the workload is running: %s", integrations.QueueNameLabel, what, howToSuspend(in)))
	return nil
}

func howToSuspend(in *integrations.Integration) string {
	s := in.Suspension
	switch {
	case s.Field != nil:
		return "suspend it first (" + strings.Join(s.Field, ".") + ": true) or delete and re-create it"
	case s.NoReadyReplicas:
		return "scale it to zero first, or delete and re-create it"
	}
	return "delete and re-create it"
}
