package kueuecontroller

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Identity names the top-level controller an object belongs to. The singleton guard
// compares it with Configuration.controllers.allowed, which names Deployments, so that
// the ReplicaSets and Pods of the allowed Kueue Deployment are admitted as that
// Deployment while everything else that runs a Kueue manager is not.
type Identity struct {
	// Kind is the controller's kind: Deployment, ReplicaSet, StatefulSet, DaemonSet,
	// Pod, or the object's own kind when it is none of those.
	Kind string
	// Namespace is always the object's own namespace: owner references cannot point
	// across namespaces, so an object elsewhere can never borrow an allowed identity.
	Namespace string
	// Name is the controller's name.
	Name string
}

// String renders the identity the one way denials and logs name a controller, e.g.
// "Deployment kueue-system/kueue-controller-manager".
func (id Identity) String() string {
	return id.Kind + " " + id.Namespace + "/" + id.Name
}

// Kinds as they appear in Identity and in owner references.
const (
	kindDeployment  = "Deployment"
	kindReplicaSet  = "ReplicaSet"
	kindStatefulSet = "StatefulSet"
	kindDaemonSet   = "DaemonSet"
	kindPod         = "Pod"
)

// The kinds whose owners IdentityOf follows, at the only versions the API serves.
var (
	replicaSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kindReplicaSet}
	podGVK        = schema.GroupVersionKind{Group: "", Version: "v1", Kind: kindPod}
)

// podTemplateHashLabel is the label the Deployment controller puts on a ReplicaSet's
// pods; its value is the suffix it appended to the Deployment's name to name the
// ReplicaSet.
const podTemplateHashLabel = "pod-template-hash"

// IdentityOf returns the top-level controller obj belongs to:
//   - a Deployment, StatefulSet or DaemonSet is itself;
//   - a ReplicaSet whose controller is an apps Deployment is that Deployment, any other
//     ReplicaSet is itself;
//   - a Pod whose controller is an apps ReplicaSet is the Deployment whose name is the
//     ReplicaSet's without the "-<pod-template-hash>" suffix; without that label (or
//     when the ReplicaSet's name does not end in it) the ReplicaSet itself;
//   - a Pod whose controller is an apps StatefulSet or DaemonSet is that owner;
//   - anything else — a bare Pod, a Pod of a Job, a Pod claiming a Deployment as its
//     direct controller, which the Deployment controller never does — is itself.
//
// Only the controller owner reference counts, and only the shapes Kubernetes' own
// controllers produce are followed, so that an object cannot claim a parent it could
// not really have. Owner references are taken at their word: a Pod forged in the
// allowed namespace with the allowed Deployment's ReplicaSet as owner passes as that
// Deployment; a caller that needs more can check owner UIDs against the cluster view.
// Objects the API server hands to a validating webhook always carry their namespace;
// for a manifest without one the caller should use the request's namespace. A nil
// object yields the zero Identity.
func IdentityOf(obj *unstructured.Unstructured) Identity {
	if obj == nil || obj.Object == nil {
		return Identity{}
	}
	self := Identity{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	owner, ok := controllerOf(obj)
	if !ok {
		return self
	}
	switch obj.GroupVersionKind() {
	case replicaSetGVK:
		if owner.Kind == kindDeployment {
			return Identity{Kind: kindDeployment, Namespace: self.Namespace, Name: owner.Name}
		}
	case podGVK:
		switch owner.Kind {
		case kindReplicaSet:
			hash, _ := nested(obj.Object, "metadata", "labels", podTemplateHashLabel).(string)
			if deployment, ok := strings.CutSuffix(owner.Name, "-"+hash); ok && hash != "" && deployment != "" {
				return Identity{Kind: kindDeployment, Namespace: self.Namespace, Name: deployment}
			}
			return Identity{Kind: kindReplicaSet, Namespace: self.Namespace, Name: owner.Name}
		case kindStatefulSet, kindDaemonSet:
			return Identity{Kind: owner.Kind, Namespace: self.Namespace, Name: owner.Name}
		}
	}
	return self
}

// controllerOf returns obj's controller owner reference when it is one of the apps
// group's workload controllers and is named; other owners (Jobs, custom resources, a
// kind that merely shares a name with an apps kind) are not followed.
func controllerOf(obj *unstructured.Unstructured) (metav1.OwnerReference, bool) {
	for _, ref := range obj.GetOwnerReferences() { // nil when malformed
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != "apps" || ref.Name == "" {
			return metav1.OwnerReference{}, false
		}
		return ref, true
	}
	return metav1.OwnerReference{}, false
}
