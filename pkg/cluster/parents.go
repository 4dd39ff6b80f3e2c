package cluster

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// parentKinds are the controller owners Kueue's ancestry walk
// (jobframework.FindAncestorJobManagedByKueue) reads, cached so that the
// pipeline decides "part of a workload Kueue manages" as Kueue does, from
// memory: every kind Kueue manages as a whole, bar the ones already cached
// for their scale (kept by keepQueued) and Pods, which own nothing a
// controller makes. A parent costs its identity, its queue label and its
// controller owner (stripLink): a tenant cannot make it large.
var parentKinds = func() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, o := range integrations.ManagedOwners() {
		in, ok := integrations.Lookup(integrations.ParseGroupKind(o.APIVersion, o.Kind))
		if !ok || in.ScaleJudged || in.GVK.Group == "" {
			continue
		}
		out = append(out, in.GVK)
	}
	return out
}()

func isParentKind(gvk schema.GroupVersionKind) bool { return slices.Contains(parentKinds, gvk) }

// ParentKind reports whether View.Parent answers for a kind: the cached
// parents, and the kinds cached for their scale.
func ParentKind(gvk schema.GroupVersionKind) bool { return isParentKind(gvk) || scaledKind(gvk) }

// stripLink keeps what Kueue's walk reads of a parent: its identity, its queue
// label, its controller owner and, for a kind Kueue may ignore, what Kueue
// decides that by (a RayJob's spec.clusterSelector). Its pod templates, other
// labels and other owners, which the tenant may make large, are dropped.
func stripLink(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	meta := keptMetadata(u)
	delete(meta, "labels")
	if q, found, _ := unstructured.NestedString(u.Object, "metadata", "labels", integrations.QueueNameLabel); found {
		meta["labels"] = map[string]any{integrations.QueueNameLabel: q}
	}
	refs, _ := meta["ownerReferences"].([]any)
	delete(meta, "ownerReferences")
	for _, r := range refs {
		if rm, ok := r.(map[string]any); ok && rm["controller"] == true {
			meta["ownerReferences"] = []any{rm}
			break
		}
	}
	out := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta,
	}}
	if sel, found, _ := unstructured.NestedMap(u.Object, "spec", "clusterSelector"); found {
		out.Object["spec"] = map[string]any{"clusterSelector": sel}
	}
	return out, nil
}

// Parent implements View.
func (v *InformerView) Parent(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool, error) {
	if !ParentKind(gvk) {
		return nil, false, nil
	}
	// A kind served by a CRD may be absent or loading; Deployments are always
	// cached.
	if k, ok := v.optional.byGVK[gvk]; ok {
		if k.informer.Load() == nil {
			return nil, false, nil // not served: there is no such parent
		}
		if err := v.optionalReady(gvk); err != nil {
			return nil, false, err
		}
	}
	u := newUnstructured(gvk)
	if !v.get(namespace, name, u) {
		return nil, false, nil
	}
	return u, true, nil
}

// Parent implements View.
func (s *Snapshot) Parent(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool, error) {
	if !ParentKind(gvk) {
		return nil, false, nil
	}
	key := scaledKey{gvk.GroupKind(), namespace, name}
	if u, ok := s.parents[key]; ok {
		return u, true, nil
	}
	u, ok := s.scaled[key]
	return u, ok, nil
}
