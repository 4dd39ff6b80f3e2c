// Package kueuestate exports, compares and restores the Kueue objects a
// cluster's admins own (ResourceFlavors, ClusterQueues, LocalQueues and the
// rest): what uninstalling or reinstalling a managed Kueue deletes, kept in Git
// and re-applied, in dependency order, before queued jobs are admitted again.
package kueuestate

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastApplied is kubectl's client-side apply annotation: the previous apply,
// not the object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Clean is obj as an admin would keep it in Git: no status, none of what the
// API server writes (uid, resourceVersion, generation, creationTimestamp,
// managedFields, …), no last-applied annotation, no finalizers of Kueue's
// controllers, and — where the object's managedFields say exactly who set
// what (server-side applies only) — none of the fields nobody set. An object
// without such managedFields (a file, or one created with kubectl create)
// keeps its fields; PruneDefaults then drops the ones equal to their schema's
// default.
func Clean(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	owned := appliedFields(obj.GetManagedFields())
	delete(out.Object, "status")
	for k, v := range out.Object {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		if owned == nil {
			continue
		}
		sub, ok := owned["f:"+k].(map[string]any)
		if !ok {
			delete(out.Object, k)
			continue
		}
		if kept, keep := prune(v, sub); keep {
			out.Object[k] = kept
		} else {
			delete(out.Object, k)
		}
	}
	md := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations", "ownerReferences"} {
		if v, ok := nestedMeta(obj)[k]; ok {
			md[k] = v
		}
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		ann = copyMap(ann)
		delete(ann, lastApplied)
		if len(ann) == 0 {
			delete(md, "annotations")
		} else {
			md["annotations"] = ann
		}
	}
	if l, ok := md["labels"].(map[string]any); ok && len(l) == 0 {
		delete(md, "labels")
	}
	var finalizers []any
	for _, f := range obj.GetFinalizers() {
		if !strings.HasPrefix(f, "kueue.x-k8s.io/") {
			finalizers = append(finalizers, f)
		}
	}
	if len(finalizers) > 0 {
		md["finalizers"] = finalizers
	}
	out.Object["metadata"] = md
	return out
}

func nestedMeta(obj *unstructured.Unstructured) map[string]any {
	m, _ := obj.Object["metadata"].(map[string]any)
	return m
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	maps.Copy(out, m)
	return out
}

// appliedFields is the union of the fields the managedFields entries of the
// object itself (not of its status) claim, as FieldsV1 trees, when every one
// of them is a server-side apply: an apply's fields are exactly what its
// manager sent, while a create or update is credited with the defaults the API
// server filled in too (updates of metadata alone, such as a controller's
// finalizer, are ignored). nil (prune nothing) otherwise.
func appliedFields(entries []metav1.ManagedFieldsEntry) map[string]any {
	var union map[string]any
	for _, e := range entries {
		if e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &tree); err != nil {
			continue
		}
		if e.Operation != metav1.ManagedFieldsOperationApply {
			// An update of metadata only (Kueue adding its finalizer) says
			// nothing about the rest; one of anything else cannot be told
			// from the defaults.
			for k := range tree {
				if k != "f:metadata" {
					return nil
				}
			}
			continue
		}
		if union == nil {
			union = map[string]any{}
		}
		merge(union, tree)
	}
	return union
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		sv, _ := v.(map[string]any)
		dv, ok := dst[k].(map[string]any)
		if !ok {
			dst[k] = sv
			continue
		}
		merge(dv, sv)
	}
}

// prune keeps of v what the FieldsV1 tree owned claims. A node owned with no
// children listed is owned whole (a scalar, or an atomic map or list).
func prune(v any, owned map[string]any) (any, bool) {
	if !hasChildren(owned) {
		return v, true
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, child := range x {
			sub, ok := owned["f:"+k].(map[string]any)
			if !ok {
				continue
			}
			if kept, keep := prune(child, sub); keep {
				out[k] = kept
			}
		}
		return out, len(out) > 0 || owned["."] != nil
	case []any:
		var out []any
		for i, item := range x {
			sub := listEntry(owned, item, i)
			if sub == nil {
				continue
			}
			if kept, keep := prune(item, sub); keep {
				out = append(out, kept)
			}
		}
		return out, len(out) > 0 || owned["."] != nil
	}
	return v, true
}

// hasChildren reports whether a FieldsV1 node lists fields or items below it.
func hasChildren(owned map[string]any) bool {
	for k := range owned {
		if k != "." {
			return true
		}
	}
	return false
}

// listEntry finds the FieldsV1 node of a list item: by its keys
// (k:{"name":"x"}), its value (v:"x") or its index (i:0).
func listEntry(owned map[string]any, item any, index int) map[string]any {
	for k, sub := range owned {
		m, _ := sub.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		switch {
		case strings.HasPrefix(k, "k:"):
			var keys map[string]any
			if json.Unmarshal([]byte(k[2:]), &keys) != nil {
				continue
			}
			im, ok := item.(map[string]any)
			if !ok {
				continue
			}
			match := true
			for kk, kv := range keys {
				if !jsonEqual(im[kk], kv) {
					match = false
					break
				}
			}
			if match {
				return m
			}
		case strings.HasPrefix(k, "v:"):
			var val any
			if json.Unmarshal([]byte(k[2:]), &val) == nil && jsonEqual(item, val) {
				return m
			}
		case k == "i:"+itoa(index):
			return m
		}
	}
	return nil
}

// jsonEqual compares two decoded JSON values, numbers as numbers.
func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return reflect.DeepEqual(a, b)
	}
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func jsonMarshal(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// PruneDefaults drops from obj every field whose value is its schema's
// default (an OpenAPI v3 schema, as a CRD's version holds it), and the maps
// left empty by that: re-applying the object gets the same values back, and an
// export does not pin what the admin never chose.
func PruneDefaults(obj map[string]any, schema map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for k, v := range obj {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		ps, _ := props[k].(map[string]any)
		if ps == nil {
			continue
		}
		if def, ok := ps["default"]; ok && jsonEqual(v, def) {
			delete(obj, k)
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				continue
			}
			PruneDefaults(x, ps)
			if len(x) == 0 {
				delete(obj, k)
			}
		case []any:
			items, _ := ps["items"].(map[string]any)
			for _, item := range x {
				if m, ok := item.(map[string]any); ok && items != nil {
					PruneDefaults(m, items)
				}
			}
		}
	}
}
