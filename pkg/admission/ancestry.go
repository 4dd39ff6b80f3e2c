package admission

import (
	"context"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// ownerRole is what Kueue makes of a controller owner when it walks an
// object's owners up to a workload it manages
// (jobframework.FindAncestorJobManagedByKueue): a workload of its own, an
// interim owner it walks through (a ReplicaSet, toward a Deployment or
// whatever owns it), or neither (the walk stops).
type ownerRole int

const (
	ownerNone ownerRole = iota
	ownerManaged
	ownerInterim
)

// replicaSetGVK is Kueue's one built-in interim owner.
var replicaSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}

// roleOf classifies a controller owner as Kueue's walk does: by exact
// apiVersion and kind, against the catalog's frameworks, Kueue's
// externalFrameworks ("Kind.version.group") and the ReplicaSet.
func roleOf(ref *metav1.OwnerReference, view cluster.View) ownerRole {
	if integrations.IsManagedOwner(ref.APIVersion, ref.Kind) {
		return ownerManaged
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ownerNone
	}
	gvk := gv.WithKind(ref.Kind)
	if gvk == replicaSetGVK {
		return ownerInterim
	}
	if cfg, ok := view.KueueConfig(); ok && slices.Contains(cfg.ExternalFrameworks, gvk.Kind+"."+gvk.Version+"."+gvk.Group) {
		return ownerManaged
	}
	return ownerNone
}

// ownerDenial is the owner guard's message for an untrusted object whose
// controller owner Kueue would take it as part of, or "" when there is none.
// On UPDATE only a changed controller owner is judged, so existing objects are
// not wedged.
func ownerDenial(req *Request, kind string, view cluster.View) string {
	owner := metav1.GetControllerOfNoCopy(req.Object)
	if owner == nil {
		return ""
	}
	role := roleOf(owner, view)
	if role == ownerNone {
		return ""
	}
	if req.Operation == admissionv1.Update && req.OldObject != nil {
		if old := metav1.GetControllerOfNoCopy(req.OldObject); old != nil && old.UID == owner.UID {
			return ""
		}
	}
	if role == ownerInterim {
		return fmt.Sprintf("%s %q names ReplicaSet %q as its controller owner, but only the ReplicaSet controller "+
			"creates a ReplicaSet's pods: Kueue walks through a ReplicaSet to the workload that owns it and would count "+
			"this as part of that workload, never queuing it; remove the owner reference", kind, req.Name, owner.Name)
	}
	return fmt.Sprintf("%s %q names %s %q as its controller owner, but only that workload's controller may create its "+
		"parts: Kueue would count it as part of %q and never queue it; remove the owner reference "+
		"(an admin adds a controller's identity to trust.controllers)", kind, req.Name, owner.Kind, owner.Name, owner.Name)
}

// InterimOwnerGuard denies a ReplicaSet whose controller owner is a workload
// Kueue manages, from anyone but a trusted controller: Kueue walks through a
// ReplicaSet, so the pods it makes would be counted as part of that workload
// (a tiny queued Job) and never gated. ReplicaSets are not workloads
// kueue-guard queues: the validating path judges them with this step alone
// (Pipeline.Validate).
type InterimOwnerGuard struct{}

var _ ValidationStep = InterimOwnerGuard{}

// Name implements Step.
func (InterimOwnerGuard) Name() string { return ownerGuardName }

// Handles implements Step.
func (InterimOwnerGuard) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep.
func (InterimOwnerGuard) Validate(_ context.Context, req *Request, t Target, view cluster.View, d *Decision) error {
	if t.TrustedController {
		return nil
	}
	owner := metav1.GetControllerOfNoCopy(req.Object)
	if owner == nil || roleOf(owner, view) != ownerManaged {
		return nil
	}
	if msg := ownerDenial(req, "ReplicaSet", view); msg != "" {
		d.Deny(RuleUntrustedOwner, field.NewPath("metadata", "ownerReferences"), msg)
	}
	return nil
}

// IsInterimOwner reports the kinds the validating path judges as Kueue's
// interim owners, not as workloads.
func IsInterimOwner(gk schema.GroupKind) bool { return gk == replicaSetGVK.GroupKind() }

// InterimOwnerResource is the resource of Kueue's interim owner, for the
// validating webhook's rules.
var InterimOwnerResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}

// partOfManaged reports whether a trusted controller's object with a managed
// controller owner is part of a workload Kueue manages, as Kueue's ancestry
// walk decides: always, unless the owner is of a kind Kueue may ignore
// (integrations.Integration.Ignorable). Then the owner must exist, be the one
// the reference names, and be one Kueue manages (queued, or covered by
// manageJobsWithoutQueueName, and not ignored): a RayJob on an existing
// cluster is not, and the submitter Job KubeRay makes for it is judged, and
// queued and held, as a workload of its own.
func partOfManaged(req *Request, view cluster.View) (bool, error) {
	owner := metav1.GetControllerOfNoCopy(req.Object)
	if owner == nil {
		return false, nil
	}
	// ManagedOwner matched the reference exactly: its kind is in the catalog.
	in, ok := integrations.Lookup(integrations.ParseGroupKind(owner.APIVersion, owner.Kind))
	if !ok || !in.Ignorable {
		return true, nil
	}
	parent, found, err := view.Parent(in.GVK, req.Namespace, owner.Name)
	if err != nil {
		return false, fmt.Errorf("looking up %s %s/%s: %w", owner.Kind, req.Namespace, owner.Name, err)
	}
	if !found || parent.GetUID() != owner.UID || kueueIgnores(parent, req.Namespace, in, view) != "" {
		return false, nil
	}
	return workload.QueueName(parent, in) != "" || kueueHoldsUnqueued(req.Namespace, view), nil
}
