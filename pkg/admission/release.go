package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

const releaseGuardName = "release-guard"

// The rules that keep releasing a queued workload Kueue's.
var (
	RuleOnlyKueueReleases = Register(Rule{
		ID:    onlyKueueReleasesID,
		Title: "Only Kueue releases a queued workload",
		Doc: "Resuming a workload Kueue holds (spec.suspend true to false, or Kueue's scheduling gate removed from a " +
			"Pod) is Kueue's, once it admits it, and the trusted controllers'; a tenant's update that does it is denied " +
			"(UPDATE; while Kueue is away, kueue_absent says the same). A kind the install does not integrate is its " +
			"author's to resume: Kueue never will.",
		Enforcement: EnforcementDeny,
		Check:       releaseGuardName,
		CEL:         onlyKueueReleasesCEL(),
	})
	RuleKueueMarker = Register(Rule{
		ID:    RuleNamespace + ".kueue_marker",
		Title: "Kueue's markers are Kueue's",
		Doc: "The labels and annotations Kueue writes for itself and acts on (kueue.x-k8s.io/managed, " +
			"pod-suspending-parent, role-hash, prebuilt-workload-name, multikueue-origin and Kueue's TAS and stopping " +
			"bookkeeping; listed below) are refused from anyone but the trusted controllers: on a new object, " +
			"unless Kueue's own hold of that object writes the same value there; on an update, any change to them.",
		Enforcement: EnforcementDeny,
		Check:       releaseGuardName,
		CEL:         kueueMarkerCEL(),
	})
)

// ReleaseGuard keeps Kueue's decision Kueue's. A tenant may write any field
// their RBAC allows, Kueue's own markers included, and Kueue acts on what it
// finds: a pod without Kueue's gate runs, a pod marked as another parent's is
// not charged, a Job naming an admitted Workload runs under that Workload's
// quota. So the requester's markers are judged, never believed, and resuming
// a held workload is left to Kueue. Trusted controllers (Kueue among them) are
// not judged: they write these fields as part of their work.
type ReleaseGuard struct{}

var _ ValidationStep = ReleaseGuard{}

// Name implements Step.
func (ReleaseGuard) Name() string { return releaseGuardName }

// Handles implements Step.
func (ReleaseGuard) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep.
func (g ReleaseGuard) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if t.TrustedController || req.Object == nil {
		return nil
	}
	if req.Operation == admissionv1.Create {
		g.newMarkers(req, t, view, d)
		return nil
	}
	if req.OldObject == nil {
		return nil
	}
	for _, m := range workload.ChangedMarkers(req.OldObject, req.Object) {
		d.Deny(RuleKueueMarker, m.Field(), fmt.Sprintf("%s is Kueue's own marker: only Kueue and the cluster's controllers "+
			"add, change or remove it, since Kueue acts on it to decide what it holds and charges", m.Key))
	}
	in := t.Integration
	if workload.QueueName(req.Object, in) == "" || !workload.Resumes(in, req.OldObject, req.Object) || t.Unintegrated ||
		!view.KueueServing() || kueueIgnores(req.OldObject, req.Namespace, in, view) != "" {
		return nil // no queue: queue-retention judges; Kueue away: kueue-absence; not Kueue's to resume
	}
	d.Deny(RuleOnlyKueueReleases, resumeField(in), fmt.Sprintf(
		"%s %q is queued: Kueue resumes it once it admits it, and nobody else may; leave %s as it is",
		in.GVK.Kind, req.Name, resumeField(in)))
	return nil
}

// newMarkers judges the reserved markers of a new object: each must be one
// Kueue's own hold of the object writes with that value.
func (ReleaseGuard) newMarkers(req *Request, t Target, view cluster.View, d *Decision) {
	markers := workload.KueueMarkers(req.Object)
	if len(markers) == 0 {
		return
	}
	holds := kueueHoldsKind(req, t.Integration, view)
	for _, m := range markers {
		if holds && workload.SetByHold(req.Object, t.Integration, m) {
			continue
		}
		d.Deny(RuleKueueMarker, m.Field(), fmt.Sprintf("%s=%q is Kueue's own marker, and Kueue would not write it "+
			"here: only Kueue and the cluster's controllers set it, since Kueue acts on it to decide what it holds "+
			"and charges; remove it", m.Key, m.Value))
	}
}
