package policies

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// StepName is the policy step's name in the pipeline.
const StepName = "policies"

// RulePolicyEvaluation is the rule of failures that concern the whole policy set
// rather than one policy.
var RulePolicyEvaluation = admission.Register(admission.Rule{
	ID:          admission.RuleNamespace + ".policy_evaluation",
	Title:       "Policy set evaluates",
	Doc:         "The Rego policy set could not be evaluated for the workload; policies.onError decides (deny or allow).",
	Enforcement: admission.EnforcementDeny,
	Check:       StepName,
	WebhookOnly: "it evaluates the Rego policies",
})

// maxWarning caps one admission warning. The API server truncates long warnings
// anyway; cutting here keeps the policy id at the front intact.
const maxWarning = 256

// Step is the validating pipeline's Rego step. It evaluates the serving policy set
// on every queued workload and turns findings into violations: deny findings
// reject the request, warn findings become kubectl warnings, dryrun findings are
// only logged and counted. Evaluation failures follow policies.onError.
type Step struct {
	engine *Engine
	frags  *fragments
}

var _ admission.Step = (*Step)(nil)

// NewStep wraps an engine as a pipeline step.
func NewStep(e *Engine) *Step { return &Step{engine: e, frags: &fragments{}} }

// Name implements admission.Step.
func (*Step) Name() string { return StepName }

// Handles implements admission.Step: policies judge creations and updates
// (which updates they deny is theirs to say: input.request.operation).
func (*Step) Handles(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update
}

// Validate implements admission.ValidationStep. It skips objects that are not
// Kueue workloads (no queue name after defaulting: Kueue ignores them, so quota
// policies have nothing to say), and requests an earlier step has denied. It never returns an error: a failure is a
// violation decided by policies.onError, so that the choice between failing open
// and closed is the user's, not the webhook's failurePolicy.
func (s *Step) Validate(ctx context.Context, req *admission.Request, t admission.Target, view cluster.View, d *admission.Decision) error {
	if req.Object == nil || t.Integration == nil || workload.QueueName(req.Object, t.Integration) == "" {
		return nil
	}
	// An object being deleted is never denied: Kueue admits nothing for it any
	// more, and denying its updates (a controller's or its owner's finalizer
	// removal) would hold it Terminating. The deletion mark is read from the
	// stored object: only a DELETE sets it, never an update's author.
	if admission.Deleting(req) {
		return nil
	}
	// A request a built-in rule already denies is answered without the
	// policies: their findings would not change the answer, and a tenant's
	// stream of refused objects must not cost a policy evaluation each.
	if !d.Allowed() {
		return nil
	}
	ns := lookupNamespace(req, view)
	plan := s.engine.Plan(subject(req, t, ns))
	if plan.Empty() {
		return nil
	}
	// Kueue unsuspending a job, a controller removing a finalizer, partial
	// admission lowering parallelism: a trusted controller's update that asks
	// Kueue for nothing more is never denied by a policy, so a policy added
	// after a workload was admitted cannot wedge it. It is told apart before
	// taking an evaluation slot, so that a flood of tenants' objects holding
	// the slots cannot time it out.
	// An update is also decided here, without an evaluation, when every
	// policy that applies declares (custom.match.updates) changes it does
	// not make.
	var facts *requestFacts
	if req.Operation == admissionv1.Update && (t.TrustedController || plan.judgesSomeUpdatesOnly()) {
		f, err := summarizeRequest(ctx, req, view)
		if err == nil {
			if t.TrustedController && !f.grows {
				return nil
			}
			if plan = plan.forUpdate(changesOf(req, f)); plan.Empty() {
				return nil
			}
		}
		facts = f
	}
	// Otherwise the summary and the input are built inside the evaluation
	// slot: they cost several times the object in memory, so the slots, not
	// the requests in flight, bound them.
	res := plan.EvaluateBuilt(ctx, func(paths *InputPaths) (ast.Value, error) {
		if facts == nil {
			f, err := summarizeRequest(ctx, req, view)
			if err != nil {
				return nil, err
			}
			facts = f
		}
		return buildInput(req, t, view, facts, ns, s.frags, paths)
	}, func() func() (ast.Value, error) { return s.rebuilder(req, t, view) })
	s.apply(ctx, res, d)
	return nil
}

// rebuilder is what builds req's whole input again for the canary, from the
// request kept as JSON (keptRequest): nil when it cannot be encoded.
func (s *Step) rebuilder(req *admission.Request, t admission.Target, view cluster.View) func() (ast.Value, error) {
	k, err := keepRequest(req)
	if err != nil {
		return nil
	}
	return func() (ast.Value, error) {
		r, err := k.request()
		if err != nil {
			return nil, err
		}
		// The request's context has ended by now: the canary's evaluation has
		// its own deadline.
		f, err := summarizeRequest(context.Background(), r, view)
		if err != nil {
			return nil, err
		}
		return buildInput(r, t, view, f, lookupNamespace(r, view), s.frags, nil)
	}
}

// subject is what the policies' custom.match is matched against.
func subject(req *admission.Request, t admission.Target, ns requestNamespace) *Subject {
	sub := &Subject{Kind: t.Integration.GVK.GroupKind(), Operation: req.Operation, Namespace: ns.name,
		Labels: req.Object.GetLabels(), Size: req.Size}
	if ns.obj != nil {
		sub.NamespaceLabels = ns.obj.Labels
	}
	return sub
}

// apply adds a Result to a Decision. Violation messages are bare: the handler
// prefixes denials with "[rule]". Warnings are returned to the client as they
// are, so they carry the prefix here.
func (s *Step) apply(ctx context.Context, res *Result, d *admission.Decision) {
	logger := log.FromContext(ctx)
	for _, f := range res.Findings {
		d.Violations = append(d.Violations, admission.Violation{Rule: f.Policy.ID, Field: f.Field, Message: f.Message, Enforcement: f.Enforcement})
		switch f.Enforcement {
		case admission.EnforcementWarn:
			d.Warnings = append(d.Warnings, WarningText(f.Policy.ID, f.Message))
		case admission.EnforcementDryRun:
			logger.Info("dry-run policy violation", "policy", f.Policy.ID, "rule", f.Rule, "field", f.Field, "message", f.Message)
		}
	}
	onError := s.engine.OnError()
	for _, f := range res.Failures {
		rule, what := f.PolicyID(), f.PolicyID()
		if rule == "" {
			rule, what = RulePolicyEvaluation, "the policy set"
		}
		logger.Error(f.Err, "policy evaluation failed", "policy", rule, "reason", f.Reason, "onError", onError)
		if onError == config.OnErrorAllow {
			msg := fmt.Sprintf("policy engine failed evaluating %s: %s; the request was admitted because policies.onError is allow", what, f.Reason)
			d.Violations = append(d.Violations, admission.Violation{Rule: rule, Message: msg, Enforcement: admission.EnforcementWarn})
			d.Warnings = append(d.Warnings, WarningText(rule, msg))
			continue
		}
		msg := fmt.Sprintf("policy engine failed evaluating %s: %s; the request was denied because policies.onError is deny", what, f.Reason)
		d.Violations = append(d.Violations, admission.Violation{Rule: rule, Message: msg, Enforcement: admission.EnforcementDeny})
	}
}

// WarningText renders a policy warning the way denials are rendered,
// "[policy-id] message", capped in length.
func WarningText(id, msg string) string {
	return truncate("["+id+"] "+msg, maxWarning)
}
