package admission

import (
	"context"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
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
		return fmt.Sprintf("%s %q names ReplicaSet %q as its controller owner, but only Kubernetes' controllers "+
			"make what a ReplicaSet owns: Kueue walks through a ReplicaSet to the workload that owns it and would count "+
			"this as part of that workload, never queuing it; remove the owner reference", kind, req.Name, owner.Name)
	}
	return fmt.Sprintf("%s %q names %s %q as its controller owner, but only that workload's controller may create its "+
		"parts: Kueue would count it as part of %q and never queue it; remove the owner reference "+
		"(an admin adds a controller's identity to trust.controllers)", kind, req.Name, owner.Kind, owner.Name, owner.Name)
}

// InterimOwnerGuard denies a ReplicaSet whose controller owner is one Kueue
// walks through or to (a workload it manages, another ReplicaSet, an external
// framework), from anyone but a trusted controller: the pods it makes would be
// counted as part of the workload at the chain's top (a tiny queued Job) and
// never gated. So every link of a chain Kueue walks is a trusted
// controller's. ReplicaSets are not workloads
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

// managedOwnersChainLimit is the depth at which Kueue's walk gives up
// (jobframework's managedOwnersChainLimit, unexported).
const managedOwnersChainLimit = 10

// partOfManaged reports whether a trusted controller's object with a managed
// controller owner is part of a workload Kueue manages, decided as Kueue's
// webhooks and reconcilers decide it (jobframework.FindAncestorJobManagedByKueue,
// which reads through a client we cannot hand it from the request path): walk
// the controller owners, from the cache, while each is the one its reference
// names; the object is a part when some ancestor is of a kind Kueue enables
// (any, while Kueue's Configuration cannot be read) and queued (or
// manageJobsWithoutQueueName is set). kueue-guard adds one
// condition: Kueue must not ignore that ancestor (a RayJob on an existing
// cluster), for then the part is held by nobody and must be judged on its own.
// An owner the cache lacks is an error, as in Kueue's walk: its webhook
// refuses the object too, and the controller retries.
//
// The walk stops at an owner the cache does not hold (a ReplicaSet, an
// external framework, a Pod) where Kueue's would go on: above it Kueue could
// only find another ancestor, so the answer changes only when none was found
// below, and then the object is judged, which refuses or holds it.
func partOfManaged(req *Request, view cluster.View) (bool, error) {
	top, err := kueueAncestor(req.Object, req.Namespace, view)
	if err != nil || top == nil {
		return false, err
	}
	in, _ := integrations.Lookup(top.GroupVersionKind().GroupKind())
	return kueueIgnores(top, req.Namespace, in, view) == "", nil
}

// kueueAncestor is the topmost ancestor Kueue counts obj as part of, or nil.
func kueueAncestor(obj metav1.Object, namespace string, view cluster.View) (*unstructured.Unstructured, error) {
	cfg, _ := view.KueueConfig()
	unqueued := cfg != nil && cfg.ManageJobsWithoutQueueName
	frameworks, known := view.KueueFrameworks()
	seen := sets.New[types.UID]()
	var top *unstructured.Unstructured
	for cur := obj; ; {
		if seen.Has(cur.GetUID()) {
			return nil, fmt.Errorf("the controller owners of %q form a cycle, which Kueue refuses to walk", obj.GetName())
		}
		seen.Insert(cur.GetUID())
		owner := metav1.GetControllerOfNoCopy(cur)
		if owner == nil || !integrations.IsManagedOwner(owner.APIVersion, owner.Kind) {
			return top, nil
		}
		in, _ := integrations.Lookup(integrations.ParseGroupKind(owner.APIVersion, owner.Kind))
		if !cluster.ParentKind(in.GVK) {
			return top, nil // a Pod: see partOfManaged
		}
		parent, found, err := view.Parent(in.GVK, namespace, owner.Name)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("kueue-guard has not seen %s %s/%s, the controller owner of %q, yet; retry in a few seconds",
				owner.Kind, namespace, owner.Name, obj.GetName())
		}
		if parent.GetUID() != owner.UID {
			return top, nil
		}
		queue, _, _ := unstructured.NestedString(parent.Object, "metadata", "labels", integrations.QueueNameLabel)
		if (!known || in.EnabledBy(frameworks)) && (unqueued || queue != "") {
			top = parent
		}
		if len(seen) > managedOwnersChainLimit {
			return nil, fmt.Errorf("the controller owners of %q are nested deeper than Kueue walks (%d)", obj.GetName(), managedOwnersChainLimit)
		}
		cur = parent
	}
}
