package cluster

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// keepQueued is the cache transform of a scaled kind: a queued workload is kept
// whole, because a scale of it is judged as an update of the whole workload,
// but for its containers' arguments (KeptArgv) and up to maxCachedWorkload;
// any other is cut down by strip, so a cluster's StatefulSets and Deployments
// cost memory only when Kueue manages them. (A label selector cannot do this:
// the queue label may be in the pod template only.)
func keepQueued(strip toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !queued(u) {
			return strip(obj)
		}
		trimArgv(u)
		size := approxSize(u.Object)
		if size <= maxCachedWorkload {
			return u, nil
		}
		out, err := strip(u)
		if s, ok := out.(*unstructured.Unstructured); ok && err == nil {
			md, _ := s.Object["metadata"].(map[string]any)
			md["annotations"] = map[string]any{cacheTrimmedAnnotation: strconv.Itoa(size)}
		}
		return out, err
	}
}

// maxCachedWorkload bounds what the cache keeps of one queued workload (in
// approxSize bytes, arguments trimmed): a tenant may make any number of them
// as large as the API server takes (1.5 MB each).
const maxCachedWorkload = 256 << 10

// cacheTrimmedAnnotation marks, on a cached copy only, a queued workload
// larger than maxCachedWorkload, kept as strip keeps unqueued ones: its
// scale cannot be judged from the cache (ScaleTarget says so).
const cacheTrimmedAnnotation = "kueue-guard.io/cache-trimmed"

// trimArgv keeps of every container's command and args what KeptArgv keeps.
func trimArgv(u *unstructured.Unstructured) {
	for _, path := range workload.PodSpecPaths(u) {
		spec, ok := nestedMap(u.Object, path)
		if !ok {
			continue
		}
		for _, key := range workload.ContainerLists {
			list, _ := spec[key].([]any)
			for _, c := range list {
				if cm, ok := c.(map[string]any); ok {
					trimContainerArgv(cm)
				}
			}
		}
	}
}

func trimContainerArgv(cm map[string]any) {
	command, _ := cm["command"].([]any)
	args, _ := cm["args"].([]any)
	command, args = kueuecontroller.KeptArgv(command, args)
	for key, v := range map[string][]any{"command": command, "args": args} {
		if v == nil {
			delete(cm, key)
		} else {
			cm[key] = v
		}
	}
}

// nestedMap follows a path of map keys and list indices (workload.PodSpecPaths).
func nestedMap(obj map[string]any, path []any) (map[string]any, bool) {
	var cur any = obj
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false
			}
			cur = l[k]
		}
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// approxSize is about the bytes of an unstructured object's JSON: its strings
// and keys, and a few for every other value. Cheaper than encoding it, on
// every event of every queued workload.
func approxSize(v any) int {
	switch t := v.(type) {
	case map[string]any:
		n := 2
		for k, e := range t {
			n += len(k) + 4 + approxSize(e)
		}
		return n
	case []any:
		n := 2
		for _, e := range t {
			n += 1 + approxSize(e)
		}
		return n
	case string:
		return len(t) + 2
	default:
		return 8
	}
}

// CacheOptions configures an informer cache that only serves the cached types and
// never starts an informer lazily: a lookup of anything else fails instead of
// quietly listing from the API server on the request path. ConfigMaps are cached
// in Kueue's namespace only; Deployments that are not queued are stripped to
// what the Kueue controller fingerprint reads, and other unqueued workloads of
// scaled kinds to their metadata. The scaled kinds' transform is the default
// one, dispatched by kind, not a per-object option: the cache resolves every
// per-object option when it is created, which fails for a CRD not installed
// yet.
func CacheOptions(scheme *runtime.Scheme, kueueNamespace string) cache.Options {
	byObject := map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{kueueNamespace: {}}},
	}
	deployment := cache.ByObject{Transform: stripDeployment}
	scaled := map[schema.GroupVersionKind]toolscache.TransformFunc{}
	for _, in := range integrations.ScaleJudged() {
		if in.GVK == deploymentGVK {
			deployment.Transform = keepQueued(stripDeployment)
			continue
		}
		scaled[in.GVK] = keepQueued(stripToMetadata)
	}
	for _, gvk := range parentKinds {
		scaled[gvk] = stripLink
	}
	byObject[newDeployment()] = deployment
	byObject[newUnstructured(crdGVK)] = cache.ByObject{Transform: stripCRD}
	return cache.Options{Scheme: scheme, ReaderFailOnMissingInformer: true, ByObject: byObject,
		DefaultTransform: func(obj any) (any, error) {
			// Not a ByObject entry: that would need resource.k8s.io served.
			if t, ok := obj.(*resourcev1.ResourceClaimTemplate); ok {
				t.ManagedFields = nil
				return t, nil
			}
			if dc, ok := obj.(*resourcev1.DeviceClass); ok {
				dc.ManagedFields = nil
				return dc, nil
			}
			if wl, ok := obj.(*kueue.Workload); ok {
				// Kueue's scheduler reads the spec and status; a busy
				// Workload's managedFields are as large.
				wl.ManagedFields = nil
				return wl, nil
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				if t, ok := scaled[u.GroupVersionKind()]; ok {
					return t(obj)
				}
			}
			return obj, nil
		}}
}

// stripToMetadata keeps an object's identity and labels.
func stripToMetadata(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": keptMetadata(u),
	}}, nil
}

// keptMetadata is the part of an object's metadata a stripped copy keeps.
func keptMetadata(u *unstructured.Unstructured) map[string]any {
	meta := map[string]any{}
	m, _ := u.Object["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace", "uid", "labels", "ownerReferences", "resourceVersion", "creationTimestamp", "deletionTimestamp"} {
		if v, ok := m[k]; ok {
			meta[k] = v
		}
	}
	return meta
}

// maxImageLen is the longest image reference a stripped Deployment keeps.
const maxImageLen = 1024

// kueueChartAnnotation is the pod template annotation of Kueue's Helm chart
// that the Kueue controller fingerprint reads.
const kueueChartAnnotation = "charts.kueue.x-k8s.io/config-checksum"

// stripDeployment keeps a Deployment's identity, labels, owners, its pod
// template's labels and Kueue chart annotation, and its containers' images,
// commands, arguments and port names: what the Kueue controller fingerprint
// reads. Everything else is dropped before caching.
func stripDeployment(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	md := keptMetadata(u)
	spec := map[string]any{}
	if tmpl, found, _ := unstructured.NestedMap(u.Object, "spec", "template"); found {
		podSpec := map[string]any{}
		for _, key := range []string{"containers", "initContainers"} {
			list, _, _ := unstructured.NestedSlice(tmpl, "spec", key)
			var kept []any
			for _, c := range list {
				cm, ok := c.(map[string]any)
				if !ok {
					continue
				}
				slim := map[string]any{}
				if name, ok := cm["name"]; ok {
					slim["name"] = name
				}
				// No registry serves a longer reference: such a pod never runs.
				if image, ok := cm["image"].(string); ok && len(image) <= maxImageLen {
					slim["image"] = image
				}
				trimContainerArgv(cm)
				for _, f := range []string{"command", "args"} {
					if v, ok := cm[f]; ok {
						slim[f] = v
					}
				}
				// Only the names of the ports: Kueue's manager names one visibility.
				if ports, ok := cm["ports"].([]any); ok {
					var names []any
					for _, p := range ports {
						if pm, ok := p.(map[string]any); ok && pm["name"] != nil {
							names = append(names, map[string]any{"name": pm["name"]})
						}
					}
					if names != nil {
						slim["ports"] = names
					}
				}
				kept = append(kept, slim)
			}
			if kept != nil {
				podSpec[key] = kept
			}
		}
		t := map[string]any{"spec": podSpec}
		tmd := map[string]any{}
		if labels, found, _ := unstructured.NestedMap(tmpl, "metadata", "labels"); found {
			tmd["labels"] = labels
		}
		// Of the annotations, only the one Kueue's chart marks its manager with.
		if annotations, found, _ := unstructured.NestedStringMap(tmpl, "metadata", "annotations"); found {
			if v, ok := annotations[kueueChartAnnotation]; ok {
				tmd["annotations"] = map[string]any{kueueChartAnnotation: v}
			}
		}
		if len(tmd) > 0 {
			t["metadata"] = tmd
		}
		spec["template"] = t
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": md, "spec": spec,
	}}, nil
}
