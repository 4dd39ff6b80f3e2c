package workload

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// The functions below write JSON patches for the mutating webhook: each edit
// of the object is also returned as the patch operations that make it.

// SetLabel sets one label in the kind's queue-label metadata, creating the maps on
// the way, and returns the JSON patch operations (RFC 6902) that do the same to
// the object as received: none when the label already has the value. It fails
// only when something on the path is not a map.
func SetLabel(obj *unstructured.Unstructured, in *integrations.Integration, key, value string) ([]jsonpatch.Operation, error) {
	return setValue(obj, in.LabelsPath(), key, value)
}

// SetAnnotation sets one annotation beside the queue label, as SetLabel does.
func SetAnnotation(obj *unstructured.Unstructured, in *integrations.Integration, key, value string) ([]jsonpatch.Operation, error) {
	return setValue(obj, in.AnnotationsPath(), key, value)
}

// SetField sets the field at path (maps created as needed) to value, returning
// the patch that does the same: how a workload is suspended.
func SetField(obj *unstructured.Unstructured, path []string, value any) ([]jsonpatch.Operation, error) {
	if len(path) == 0 {
		return nil, errors.New("no field to set")
	}
	return setValue(obj, path[:len(path)-1], path[len(path)-1], value)
}

// AddSchedulingGate adds a scheduling gate to a Pod, unless it has it.
func AddSchedulingGate(obj *unstructured.Unstructured, gate string) ([]jsonpatch.Operation, error) {
	if HasSchedulingGate(obj, gate) {
		return nil, nil
	}
	spec, ok := obj.Object["spec"].(map[string]any)
	if !ok {
		return nil, errors.New("spec is not an object")
	}
	entry := map[string]any{"name": gate}
	switch gates := spec["schedulingGates"].(type) {
	case nil:
		spec["schedulingGates"] = []any{entry}
		return []jsonpatch.Operation{jsonpatch.NewOperation("add", "/spec/schedulingGates", []any{map[string]any{"name": gate}})}, nil
	case []any:
		spec["schedulingGates"] = append(gates, entry)
		return []jsonpatch.Operation{jsonpatch.NewOperation("add", "/spec/schedulingGates/-", map[string]any{"name": gate})}, nil
	default:
		return nil, errors.New("spec.schedulingGates is not a list")
	}
}

// setValue sets path.key to value. The patch adds the first map missing on the
// path with everything below it, or the key to the existing map: one operation,
// whose value shares nothing with the object, so that later edits of the object
// do not change what the patch says.
func setValue(obj *unstructured.Unstructured, path []string, key string, value any) ([]jsonpatch.Operation, error) {
	cur := obj.Object
	for i, seg := range path {
		next, ok := cur[seg]
		if !ok || next == nil {
			cur[seg] = nestedValue(path[i+1:], key, value)
			return []jsonpatch.Operation{jsonpatch.NewOperation("add", pointer(path[:i+1]...), nestedValue(path[i+1:], key, value))}, nil
		}
		m, ok := next.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", strings.Join(path[:i+1], "."))
		}
		cur = m
	}
	if old, ok := cur[key]; ok && old == value {
		return nil, nil
	}
	cur[key] = value
	return []jsonpatch.Operation{jsonpatch.NewOperation("add", pointer(append(slices.Clone(path), key)...), value)}, nil
}

// nestedValue is {path[0]: {path[1]: ... {key: value}}}.
func nestedValue(path []string, key string, value any) map[string]any {
	v := map[string]any{key: value}
	for _, p := range slices.Backward(path) {
		v = map[string]any{p: v}
	}
	return v
}

// pointerEscaper escapes a JSON pointer's reference token (RFC 6901): ~ first.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer is the JSON pointer of a path of map keys.
func pointer(keys ...string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(k))
	}
	return b.String()
}

// segmentsPointer is the JSON pointer of a walk's path followed by map keys.
func segmentsPointer(segs []segment, keys ...string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s.key == "" {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(pointerEscaper.Replace(s.key))
		}
	}
	return b.String() + pointer(keys...)
}
