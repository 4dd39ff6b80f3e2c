package workload

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// unreadContainerFields are the container fields that nothing computing a
// summary or a Kueue unit reads for the kinds decoded with decodedForQuota:
// their Kueue adapters copy pod templates as they are, and Kueue's quota
// arithmetic (requests, limits standing in for them, sidecars by restart
// policy, LimitRange defaults, DRA claims) and scheduler read only a
// container's resources, name and restart policy. They are most of a real
// job's bytes (environment, commands, probes): converting them to typed
// objects was half the conversion of a 20 KB JobSet, and 8% of its admission
// (BenchmarkHandler). A deny list, so that a field Kubernetes adds later is
// kept, not guessed at; slim_internal_test.go proves the fields unread.
var unreadContainerFields = map[string]bool{
	"command": true, "args": true, "workingDir": true, "env": true, "envFrom": true,
	"ports": true, "volumeMounts": true, "volumeDevices": true,
	"livenessProbe": true, "readinessProbe": true, "startupProbe": true, "lifecycle": true,
	"securityContext": true, "terminationMessagePath": true, "terminationMessagePolicy": true,
	"imagePullPolicy": true, "stdin": true, "stdinOnce": true, "tty": true,
}

// unreadPodFields are the pod spec fields dropped as unread, on the same
// terms: a pod's volumes (Kueue charges no volume, and counts DRA claims
// through resourceClaims) were a fifth of the conversion of a 20 KB JobSet
// once its containers were slimmed. A pod spec is a map with a containers list.
var unreadPodFields = map[string]bool{"volumes": true}

// slimContainers says whether decodedForQuota drops unreadContainerFields;
// only the specs that prove the fields unread turn it off.
var slimContainers = true

// decodedForQuota is decoded without unreadContainerFields. Only the builders
// of kinds whose Kueue adapter reads nothing else of a container use it: not
// Pods (Kueue's role hash of a pod group covers the whole spec), nor Ray or
// Spark (their adapters read containers by image and name, and may in time
// read more).
func decodedForQuota[T any](obj *unstructured.Unstructured) (*T, error) {
	if !slimContainers {
		return decoded[T](obj)
	}
	spec, changed := withoutUnreadContainerFields(obj.Object["spec"])
	if !changed {
		return decoded[T](obj)
	}
	slim := maps.Clone(obj.Object)
	slim["spec"] = spec
	return decoded[T](&unstructured.Unstructured{Object: slim})
}

// withoutUnreadContainerFields is v with unreadContainerFields dropped from
// every element of every containers, initContainers and ephemeralContainers
// list in it, and unreadPodFields from every pod spec, and whether anything
// was dropped. Only the maps and lists on the way to a change are copied: v
// is never modified.
func withoutUnreadContainerFields(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		var out map[string]any
		_, podSpec := v["containers"].([]any)
		for k, child := range v {
			if podSpec && unreadPodFields[k] {
				if out == nil {
					out = maps.Clone(v)
				}
				delete(out, k)
				continue
			}
			var slim any
			var changed bool
			if list, ok := child.([]any); ok && slices.Contains(ContainerLists, k) {
				slim, changed = slimContainerList(list)
			} else {
				slim, changed = withoutUnreadContainerFields(child)
			}
			if !changed {
				continue
			}
			if out == nil {
				out = maps.Clone(v)
			}
			out[k] = slim
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, child := range v {
			slim, changed := withoutUnreadContainerFields(child)
			if !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), v...)
			}
			out[i] = slim
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// slimContainerList drops unreadContainerFields from each container map.
func slimContainerList(list []any) (any, bool) {
	var out []any
	for i, c := range list {
		m, ok := c.(map[string]any)
		if !ok || !hasUnread(m) {
			continue
		}
		if out == nil {
			out = append([]any(nil), list...)
		}
		slim := make(map[string]any, len(m))
		for k, v := range m {
			if !unreadContainerFields[k] {
				slim[k] = v
			}
		}
		out[i] = slim
	}
	if out == nil {
		return list, false
	}
	return out, true
}

func hasUnread(m map[string]any) bool {
	for k := range m {
		if unreadContainerFields[k] {
			return true
		}
	}
	return false
}
