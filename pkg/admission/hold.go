package admission

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

const kueueHoldName = "kueue-hold"

// RuleNotHeld is the outcome check: a new workload Kueue will admit arrives
// held, whatever ran before.
var RuleNotHeld = Register(Rule{
	ID:    RuleNamespace + ".not_held",
	Title: "A new queued workload arrives held",
	Doc: "A new workload Kueue will admit (a kind the install's Kueue integrates, with a queue, or covered by Kueue's " +
		"manageJobsWithoutQueueName) must be " +
		"stored held the way Kueue's own webhook holds its kind: suspended; a Pod with Kueue's scheduling gate; a " +
		"Deployment's, StatefulSet's or LeaderWorkerSet's pod template marked kueue.x-k8s.io/pod-suspending-parent. " +
		"The mutating path sets that hold itself, so the order of the webhooks does not matter; this denies what " +
		"arrives without it (kueue-guard's mutating webhook did not run, or a later one undid it). CREATE only.",
	Enforcement: EnforcementDeny,
	Check:       kueueHoldName,
	WebhookOnly: "it applies Kueue's own hold of each kind (in Go); while kueue-guard is down, the default-queue " +
		"policy labels new workloads before Kueue's webhook, which then holds them",
})

// KueueHold makes "labelled" mean "held": on CREATE, a workload Kueue will
// admit gets the hold Kueue's own webhook would give it (workload.Hold), and
// the validating path refuses one that arrives without it. Kueue's webhook is
// not reinvoked after kueue-guard's labels, so a webhook order that calls
// Kueue's first (an aks-kueue release's does) would otherwise create every
// defaulted workload running. What Kueue ignores whatever its queue
// (kueueIgnores) is not held: nothing would release it. While Kueue is not
// serving, KueueAbsence holds instead.
type KueueHold struct{}

// KueueHolder is KueueHold's mutating half.
type KueueHolder struct{ KueueHold }

var (
	_ ValidationStep = KueueHold{}
	_ MutationStep   = KueueHolder{}
	_ Settler        = KueueHolder{}
)

// Name implements Step.
func (KueueHold) Name() string { return kueueHoldName }

// Handles implements Step: both halves judge creations only.
func (KueueHold) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Settled implements Settler: a kind Kueue does not hold by itself (CronJob)
// has nothing to set, and neither has a workload whose requester set its queue
// where Kueue reads it while Kueue's webhook runs after ours: Kueue sees the
// queue whatever the order, and holds it itself (kueueSeesQueue).
func (KueueHolder) Settled(_ string, in *integrations.Integration, own map[string]string, view cluster.View) bool {
	return !workload.Holdable(in) || (own[integrations.QueueNameLabel] != "" && len(view.KueueWebhooksFirst()) == 0)
}

// kueueSeesQueue reports whether Kueue's webhook holds the workload itself:
// the requester set the queue at the kind's own place (kueue-guard did not
// default it in this request), and Kueue's webhook runs after ours.
func kueueSeesQueue(req *Request, in *integrations.Integration, view cluster.View, d *Decision) bool {
	return d.Defaulted == nil && workload.OwnLabel(req.Object, in, integrations.QueueNameLabel) != "" &&
		len(view.KueueWebhooksFirst()) == 0
}

// applies reports whether Kueue's webhook, serving, would hold the new
// workload.
func (KueueHold) applies(req *Request, t Target, view cluster.View) bool {
	return view.KueueServing() && kueueWouldHold(req, t, view)
}

// kueueWouldHold reports whether Kueue holds the new workload until it admits
// it: a kind the install's Kueue integrates, held as kueueHoldsKind says.
func kueueWouldHold(req *Request, t Target, view cluster.View) bool {
	return !t.Unintegrated && kueueHoldsKind(req, t.Integration, view)
}

// kueueHoldsKind reports whether Kueue's hold of the kind applies to the new
// workload, were the kind integrated: a kind it holds, queued (or covered by
// manageJobsWithoutQueueName), not one it ignores whatever its queue. Kueue's
// markers are judged by it (what that hold would write), as their twin does.
func kueueHoldsKind(req *Request, in *integrations.Integration, view cluster.View) bool {
	return req.Object != nil && workload.Holdable(in) &&
		(workload.QueueName(req.Object, in) != "" || kueueHoldsUnqueued(req.Namespace, view)) &&
		kueueIgnores(req.Object, req.Namespace, in, view) == ""
}

// Mutate implements MutationStep.
func (h KueueHolder) Mutate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if !h.applies(req, t, view) || kueueSeesQueue(req, t.Integration, view, d) {
		return nil
	}
	// A suspended kind is held by one field; a Pod's or a template's hold
	// has several parts, each set if missing.
	if held, _ := workload.Held(req.Object, t.Integration); held && t.Integration.Suspension.Field != nil {
		return nil
	}
	// An object that cannot be held (a spec that is not an object) is left as
	// it came, and the validating half refuses it: a hold made whole or not
	// at all is made on the path's own object (copied only when shared), any
	// other on a copy.
	var obj *unstructured.Unstructured
	if workload.HoldsWhole(t.Integration) {
		obj = req.writable()
	} else {
		obj = req.Object.DeepCopy()
	}
	ops, err := workload.Hold(obj, t.Integration)
	if err != nil || len(ops) == 0 {
		return nil //nolint:nilerr // refused by the validating half, with the reason
	}
	req.Object, req.owned = obj, true
	d.Patch = append(d.Patch, ops...)
	d.Annotate("kueue-hold", "set")
	if first := view.KueueWebhooksFirst(); len(first) > 0 && d.Defaulted != nil {
		d.Warnings = append(d.Warnings, OrderWarning(first))
	}
	return nil
}

// OrderWarning tells how to fix a webhook order that calls Kueue's webhook
// before kueue-guard's.
func OrderWarning(first []string) string {
	return fmt.Sprintf("Kueue's mutating webhooks (%s) run before kueue-guard's and are not reinvoked, so Kueue "+
		"did not hold this workload; kueue-guard held it as Kueue would. Fix the order: rename kueue-guard's "+
		"configuration (chart value webhooks.mutatingName) to sort first, or set reinvocationPolicy: IfNeeded on Kueue's webhooks",
		strings.Join(first, ", "))
}

// Validate implements ValidationStep.
func (h KueueHold) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if !h.applies(req, t, view) {
		return nil
	}
	in := t.Integration
	held, missing := workload.Held(req.Object, in)
	if held {
		return nil
	}
	why := "kueue-guard's mutating webhook did not run on it"
	switch first := view.KueueWebhooksFirst(); {
	case len(first) > 0:
		why = OrderWarning(first)
	case t.TrustedController:
		// A controller's object from a template Kueue never marked (its
		// parent made before Kueue's webhook ran on it).
		why = "its controller made it from a template Kueue's webhook never marked; apply its parent again " +
			"(kubectl apply the Deployment) so that Kueue marks the template"
	}
	d.Deny(RuleNotHeld, QueueLabelField(in), fmt.Sprintf(
		"%s %q would be admitted by Kueue but arrives not held (%s), so it would run before Kueue admits it: %s; "+
			"retry, or create it held", in.GVK.Kind, req.Name, missing, why))
	return nil
}

// kueueWebhook is what Kueue's own webhook makes of a new workload after
// kueue-guard's mutation, for Workload, which runs both paths without an API
// server: the held copy Kueue would send on, or nil when Kueue would change
// nothing (or cannot hold it: then the validating path says so).
func (p *Pipeline) kueueWebhook(req *Request, view cluster.View) *unstructured.Unstructured {
	if req.Operation != admissionv1.Create {
		return nil
	}
	t, ok, err := p.target(req, view)
	if err != nil || !ok || !(KueueHold{}).applies(req, t, view) {
		return nil
	}
	if held, _ := workload.Held(req.Object, t.Integration); held {
		return nil
	}
	obj := req.Object.DeepCopy()
	if _, err := workload.Hold(obj, t.Integration); err != nil {
		return nil
	}
	return obj
}
