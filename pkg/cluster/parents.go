package cluster

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// Parents are the kinds Kueue may ignore whatever their queue
// (integrations.Integration.Ignorable), cached so that the pipeline can tell
// whether Kueue manages the parent of a trusted operator's child: a RayJob
// on an existing cluster is ignored, and the submitter Job KubeRay makes for
// it is a workload of its own.
func parentGVKs() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, in := range integrations.Ignorables() {
		out = append(out, in.GVK)
	}
	return out
}

func isParentKind(gvk schema.GroupVersionKind) bool { return slices.Contains(parentGVKs(), gvk) }

// stripParent keeps a parent's identity, labels and what Kueue decides to
// ignore it by (a RayJob's spec.clusterSelector): its pod templates, which
// the tenant may make large, are dropped.
func stripParent(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": keptMetadata(u),
	}}
	if sel, found, _ := unstructured.NestedMap(u.Object, "spec", "clusterSelector"); found {
		out.Object["spec"] = map[string]any{"clusterSelector": sel}
	}
	return out, nil
}

// Parent implements View.
func (v *InformerView) Parent(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool, error) {
	if k, ok := v.optional.byGVK[gvk]; !ok || k.informer.Load() == nil {
		return nil, false, nil // not served: there is no such parent
	}
	if err := v.optionalReady(gvk); err != nil {
		return nil, false, err
	}
	u := newUnstructured(gvk)
	if !v.get(namespace, name, u) {
		return nil, false, nil
	}
	return u, true, nil
}

// Parent implements View.
func (s *Snapshot) Parent(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool, error) {
	u, ok := s.parents[scaledKey{gvk.GroupKind(), namespace, name}]
	return u, ok, nil
}
