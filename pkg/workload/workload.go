// Package workload reads what admission decisions need from any catalog kind: its
// queue and priority labels, its controller owner, and the resources it requests.
//
// Objects arrive as unstructured content (the webhook registers for many kinds,
// several of them CRDs), so this package works on maps with every type assertion
// checked: a malformed object yields "not found", never a panic.
package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// Labels returns the label map that holds the kind's queue label (nil when absent
// or malformed).
func Labels(obj *unstructured.Unstructured, in *integrations.Integration) map[string]string {
	m, _, _ := unstructured.NestedStringMap(obj.Object, in.LabelsPath()...)
	return m
}

// QueueName is the workload's kueue.x-k8s.io/queue-name, or "".
func QueueName(obj *unstructured.Unstructured, in *integrations.Integration) string {
	return Labels(obj, in)[integrations.QueueNameLabel]
}

// PriorityClass is the workload's kueue.x-k8s.io/priority-class, or "".
func PriorityClass(obj *unstructured.Unstructured, in *integrations.Integration) string {
	return Labels(obj, in)[integrations.PriorityClassLabel]
}

// SetLabel sets one label in the kind's queue-label metadata, creating the maps on
// the way. It fails only when something on the path is not a map.
func SetLabel(obj *unstructured.Unstructured, in *integrations.Integration, key, value string) error {
	return setString(obj, in.LabelsPath(), key, value)
}

// SetAnnotation sets one annotation beside the queue label.
func SetAnnotation(obj *unstructured.Unstructured, in *integrations.Integration, key, value string) error {
	return setString(obj, in.AnnotationsPath(), key, value)
}

func setString(obj *unstructured.Unstructured, path []string, key, value string) error {
	m, _, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if err != nil {
		return err
	}
	if mm, ok := m.(map[string]any); ok && mm != nil {
		mm[key] = value
		return nil
	}
	return unstructured.SetNestedField(obj.Object, value, append(path, key)...)
}

// IsTopLevel reports whether the object is a workload of its own, rather than a part
// of one managed by a controller Kueue knows (a Job's pods, a JobSet's Jobs, a
// ReplicaSet's pods). Only top-level workloads get a queue.
func IsTopLevel(obj *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller &&
			integrations.IsManagedOwner(integrations.ParseGroupKind(ref.APIVersion, ref.Kind)) {
			return false
		}
	}
	return true
}

// resourceMapKeys are the fields that hold a container's or a node's resource
// requirements in the catalog's kinds: containers' `resources` in every pod
// template, and TrainJob's `resourcesPerNode`.
var resourceMapKeys = map[string]bool{"resources": true, "resourcesPerNode": true}

// RequestsResource reports whether any pod template or resource block in the object
// requests (or limits, which Kueue counts as a request when no request is given)
// a positive amount of the named resource. It walks the whole object, so it sees
// pod templates wherever a kind keeps them, embedded templates of an AppWrapper
// included.
func RequestsResource(obj *unstructured.Unstructured, name corev1.ResourceName) bool {
	return walkRequests(obj.Object, string(name), 0)
}

// maxDepth bounds the walk over untrusted input.
const maxDepth = 64

func walkRequests(node any, name string, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if resourceMapKeys[k] && hasPositive(v, name) {
				return true
			}
			if walkRequests(v, name, depth+1) {
				return true
			}
		}
	case []any:
		for _, v := range n {
			if walkRequests(v, name, depth+1) {
				return true
			}
		}
	}
	return false
}

func hasPositive(res any, name string) bool {
	m, ok := res.(map[string]any)
	if !ok {
		return false
	}
	for _, key := range []string{"requests", "limits"} {
		list, ok := m[key].(map[string]any)
		if !ok {
			continue
		}
		if v, ok := list[name]; ok && positiveQuantity(v) {
			return true
		}
	}
	return false
}

// QueueMayChange reports whether Kueue lets the queue of a workload change in an
// update from old to new: only while it is suspended (by the kind's own rule in
// the catalog), so a running workload can never leave its queue.
func QueueMayChange(in *integrations.Integration, old, new *unstructured.Unstructured) bool {
	s := in.Suspension
	switch {
	case s.QueueMutable:
		return true
	case s.Field != nil:
		suspended, _, _ := unstructured.NestedBool(new.Object, s.Field...)
		return suspended
	case s.NoReadyReplicas:
		ready, _, _ := unstructured.NestedInt64(old.Object, "status", "readyReplicas")
		// Kueue also refuses removing the label outright from such kinds.
		return ready == 0 && QueueName(new, in) != ""
	case s.SchedulingGate != "":
		gates, _, _ := unstructured.NestedSlice(new.Object, "spec", "schedulingGates")
		for _, g := range gates {
			if m, ok := g.(map[string]any); ok && m["name"] == s.SchedulingGate {
				return true
			}
		}
	}
	return false
}

// Annotations returns the annotations beside the kind's queue label.
func Annotations(obj *unstructured.Unstructured, in *integrations.Integration) (map[string]string, bool) {
	m, found, _ := unstructured.NestedStringMap(obj.Object, in.AnnotationsPath()...)
	return m, found
}
