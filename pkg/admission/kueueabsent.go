package admission

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kueueconstants "sigs.k8s.io/kueue/pkg/constants"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

const kueueAbsenceName = "kueue-absence"

// RuleKueueAbsent is what happens to a queued workload while Kueue is not
// serving: nothing else would stop it from running outside quota.
var RuleKueueAbsent = Register(Rule{
	ID:    RuleNamespace + ".kueue_absent",
	Title: "No queued workload runs while Kueue is away",
	Doc: "While Kueue is not serving (its mutating webhooks are not registered, or its CRDs are not served), a new " +
		"queued workload is created suspended (spec.suspend and the like; a Pod with Kueue's scheduling gate), so " +
		"that Kueue admits it when it is back; a kind with neither is denied, and so are resuming a suspended queued " +
		"workload and scaling up a StatefulSet or LeaderWorkerSet (pod groups only Kueue's webhook holds). Per " +
		"kueueAbsent (suspend, deny, allow); kueue_guard_kueue_serving is 0 meanwhile.",
	Enforcement: EnforcementDeny,
	Check:       kueueAbsenceName,
	WebhookOnly: "it reads whether Kueue is serving (its webhook configuration and CRDs)",
})

// KueueAbsence keeps queued workloads waiting while Kueue is not serving. On
// the mutating path it suspends a new queued workload (after defaulting, so a
// defaulted queue counts); on the validating path it refuses a new one that is
// not suspended, and an update that resumes one, so that neither a webhook
// order nor a later edit lets it run. Objects that are part of another
// workload (a Job's pods) are not judged: their owner is.
type KueueAbsence struct {
	action config.KueueAbsentAction
}

// KueueSuspender is KueueAbsence's mutating half: it handles creations only.
type KueueSuspender struct{ KueueAbsence }

var (
	_ ValidationStep = KueueAbsence{}
	_ MutationStep   = KueueSuspender{}
	_ Settler        = KueueSuspender{}
)

// NewKueueAbsence builds both halves for the configured action.
func NewKueueAbsence(action config.KueueAbsentAction) (KueueSuspender, KueueAbsence) {
	a := KueueAbsence{action: action}
	return KueueSuspender{a}, a
}

// Name implements Step.
func (KueueAbsence) Name() string { return kueueAbsenceName }

// Handles implements Step: the validating half judges creations and updates.
func (KueueAbsence) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Handles implements Step: the mutating half suspends at creation only.
func (KueueSuspender) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Settled implements Settler: with Kueue serving (or the action allow), or
// without a queue label in its own place, there is nothing to do.
func (s KueueSuspender) Settled(_ string, _ *integrations.Integration, own map[string]string, view cluster.View) bool {
	return s.action == config.KueueAbsentAllow || own[integrations.QueueNameLabel] == "" || view.KueueServing()
}

// applies reports whether the request is judged: a queued top-level workload
// while Kueue is not serving. A trusted controller's creations are judged
// too, as Kueue's own webhook would judge them: the Jobs the CronJob
// controller makes from a queued CronJob, the Pods a queued Deployment's
// ReplicaSet scales up to (what is part of another workload, a Job's Pods,
// has a Kueue-managed owner and is left to it). Its updates are not: Kueue
// itself resumes what it admits as it comes back.
//
// What Kueue leaves alone whatever its queue (a Pod outside Kueue's
// managedJobsNamespaceSelector, a RayJob on an existing cluster) is not held:
// Kueue would never release it.
func (s KueueAbsence) applies(req *Request, t Target, view cluster.View) bool {
	return s.action != config.KueueAbsentAllow && (req.Operation == admissionv1.Create || !t.TrustedController) && req.Object != nil &&
		!t.Unintegrated &&
		workload.QueueName(req.Object, t.Integration) != "" && !view.KueueServing() &&
		kueueIgnores(req.Object, req.Namespace, t.Integration, view) == ""
}

// suspendField is where a workload of the kind is suspended: the catalog's
// field, or for a CronJob the Jobs' it creates (those are created by the
// CronJob controller, which kueue-guard trusts and does not see).
func suspendField(in *integrations.Integration) []string {
	if in.GVK.Group == "batch" && in.GVK.Kind == "CronJob" {
		return []string{"spec", "jobTemplate", "spec", "suspend"}
	}
	return in.Suspension.Field
}

// suspended reports whether the object waits for Kueue: Kueue's hold of its
// kind (workload.Held: its suspend field, a Pod's gate), or for a CronJob the
// suspend field of the Jobs it creates. A kind held only by its pod template
// cannot wait suspended while Kueue is away, whatever it carries.
func suspended(obj *unstructured.Unstructured, in *integrations.Integration) bool {
	if f := suspendField(in); f != nil && in.Suspension.Field == nil {
		v, _, _ := unstructured.NestedBool(obj.Object, f...)
		return v
	}
	if in.Suspension.Field == nil && in.Suspension.SchedulingGate == "" {
		return false
	}
	held, _ := workload.Held(obj, in)
	return held
}

// absentReason is the start of every message.
func absentReason(in *integrations.Integration) string {
	return fmt.Sprintf("Kueue is not serving (its mutating webhooks are not registered, or its %s API is not served), "+
		"so nothing would keep this queued %s from running outside quota", "kueue.x-k8s.io", in.GVK.Kind)
}

// Mutate implements MutationStep: suspend (or gate) a new queued workload.
func (s KueueSuspender) Mutate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if !s.applies(req, t, view) {
		return nil
	}
	in := t.Integration
	if s.action == config.KueueAbsentDeny {
		d.Deny(RuleKueueAbsent, QueueLabelField(in), absentReason(in)+": create it again once Kueue is back (kueueAbsent: deny)")
		return nil
	}
	if suspended(req.Object, in) {
		return nil
	}
	switch f := suspendField(in); {
	case f != nil:
		ops, err := workload.SetField(req.writable(), f, true)
		if err != nil {
			return fmt.Errorf("suspending: %w", err)
		}
		d.Patch = append(d.Patch, ops...)
		d.Warn(RuleKueueAbsent, field.NewPath(f[0], f[1:]...), absentReason(in)+
			": kueue-guard sets "+strings.Join(f, ".")+": true, and Kueue admits it when it is back")
		d.Annotate("kueue-absent", "suspended")
	case in.Suspension.SchedulingGate != "":
		obj := req.writable()
		ops, err := workload.AddSchedulingGate(obj, in.Suspension.SchedulingGate)
		if err != nil {
			return fmt.Errorf("gating: %w", err)
		}
		d.Patch = append(d.Patch, ops...)
		// Kueue's pod controller follows the pods its webhook marks as
		// managed: marked, the pod is Kueue's to admit when it is back.
		ops, err = workload.SetLabel(obj, in, kueueconstants.ManagedByKueueLabelKey, "true")
		if err != nil {
			return fmt.Errorf("marking: %w", err)
		}
		d.Patch = append(d.Patch, ops...)
		d.Warn(RuleKueueAbsent, field.NewPath("spec", "schedulingGates"), absentReason(in)+
			": kueue-guard adds Kueue's scheduling gate "+in.Suspension.SchedulingGate+", and Kueue admits it when it is back")
		d.Annotate("kueue-absent", "gated")
	default:
		d.Deny(RuleKueueAbsent, QueueLabelField(in), absentReason(in)+fmt.Sprintf(
			": a %s cannot be created suspended; create it again once Kueue is back", in.GVK.Kind))
	}
	return nil
}

// Validate implements ValidationStep: the backstop of Mutate (a new queued
// workload that is not suspended), and no resuming while Kueue is away.
func (s KueueAbsence) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if !s.applies(req, t, view) {
		return nil
	}
	in := t.Integration
	switch req.Operation {
	case admissionv1.Create:
		if s.action == config.KueueAbsentDeny {
			d.Deny(RuleKueueAbsent, QueueLabelField(in), absentReason(in)+": create it again once Kueue is back (kueueAbsent: deny)")
			return nil
		}
		if !suspended(req.Object, in) {
			d.Deny(RuleKueueAbsent, QueueLabelField(in), absentReason(in)+": create it suspended, or again once Kueue is back")
		}
	case admissionv1.Update:
		switch {
		case req.OldObject == nil:
		case workload.Resumes(in, req.OldObject, req.Object):
			d.Deny(RuleKueueAbsent, resumeField(in), absentReason(in)+": it cannot be resumed until Kueue is back to admit it")
		case in.PodGroups && replicas(req.Object) > replicas(req.OldObject):
			d.Deny(RuleKueueAbsent, field.NewPath("spec", "replicas"), absentReason(in)+
				fmt.Sprintf(": the pods a %s grows to join a pod group that only Kueue's webhook holds; scale it up once Kueue is back", in.GVK.Kind))
		}
	}
	return nil
}
