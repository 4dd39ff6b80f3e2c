package workload

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/constants"
	controllerconstants "sigs.k8s.io/kueue/pkg/controller/constants"
	kueuejob "sigs.k8s.io/kueue/pkg/controller/jobs/job"
	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobs/raycluster"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// ReservedMarkers are the labels and annotations Kueue v0.19 writes on
// workloads, pod templates and pods for itself, and acts on when it finds
// them: whether a pod is its to gate and release (managed,
// pod-suspending-parent, role-hash), which Workload already admits an object
// (prebuilt-workload-name), that an object is a MultiKueue copy that another
// cluster admits (multikueue-origin), and its TAS and stopping bookkeeping.
// A tenant who writes or removes one steers Kueue's decisions about their own
// workload. Every other kueue.x-k8s.io/ key is one Kueue's docs ask users to
// write (queue-name, priority-class, max-exec-time-seconds, the pod-group
// labels and annotations of plain pod groups, pod-group-serving,
// retriable-in-group, elastic-job, job-min-parallelism, the podset-*
// topology requests, safe-to-forcefully-delete, admission-gated-by).
var ReservedMarkers = []string{
	kueueconstants.ManagedByKueueLabelKey,
	podconstants.SuspendedByParentAnnotation,
	podconstants.RoleHashAnnotation,
	podconstants.IsGroupWorkloadAnnotationKey,
	controllerconstants.PrebuiltWorkloadLabel,
	kueue.MultiKueueOriginLabel,
	kueue.MultiKueueOriginUIDAnnotation,
	kueue.MultiKueueWorkerWorkloadPodLabel,
	kueueconstants.PodSetLabel,
	kueue.WorkloadAnnotation,
	kueue.PodGroupPodIndexLabel,
	kueue.PodIndexOffsetAnnotation,
	kueue.WorkloadSliceNameAnnotation,
	kueuejob.StoppingAnnotation,
	raycluster.RayClusterPodsetReplicaSizesAnnotation,
	raycluster.RayClusterGenerationAnnotation,
	kueueconstants.ClusterQueueLabel,
	kueueconstants.LocalQueueLabel,
}

// MarkerSite is one reserved marker in an object: in its own metadata or in
// a nested one (a pod template's).
type MarkerSite struct {
	// Path is the labels or annotations map's path, Key and Value the marker.
	Path       *field.Path
	Key, Value string
	segs       []segment
	annotation bool
}

// Field is the marker as a field path, for violations.
func (m MarkerSite) Field() *field.Path { return m.Path.Key(m.Key) }

// id tells two sites apart across an old and a new object.
func (m MarkerSite) id() string { return m.Field().String() }

// KueueMarkers finds every reserved marker in the object, its own metadata
// and every nested one (templates, wherever the kind keeps them), sorted by
// field. The walk is bounded like every walk here.
func KueueMarkers(obj *unstructured.Unstructured) []MarkerSite {
	var out []MarkerSite
	walkMaps(obj.Object, nil, func(segs []segment, n map[string]any) {
		md, ok := n["metadata"].(map[string]any)
		if !ok {
			return
		}
		for _, kind := range []string{"labels", "annotations"} {
			m, ok := md[kind].(map[string]any)
			if !ok {
				continue
			}
			for _, key := range ReservedMarkers {
				if v, ok := m[key].(string); ok {
					out = append(out, MarkerSite{Path: pathOf(segs).Child("metadata", kind), Key: key, Value: v,
						segs: slices.Clone(segs), annotation: kind == "annotations"})
				}
			}
		}
	}, notTemplates...)
	slices.SortFunc(out, func(a, b MarkerSite) int { return cmp.Compare(a.id(), b.id()) })
	return out
}

// SetByHold reports whether Kueue's own hold of a new workload of the kind
// (Hold) writes this marker with this value: the markers a tenant's new
// object may carry, since Kueue's webhook would write them anyway.
func SetByHold(obj *unstructured.Unstructured, in *integrations.Integration, m MarkerSite) bool {
	c := obj.DeepCopy()
	holder := mapAt(c.Object, m.segs)
	if holder == nil {
		return false
	}
	kind := "labels"
	if m.annotation {
		kind = "annotations"
	}
	md, _ := holder["metadata"].(map[string]any)
	if mm, ok := md[kind].(map[string]any); ok {
		delete(mm, m.Key)
	}
	if _, err := Hold(c, in); err != nil {
		return false
	}
	got, _, _ := unstructured.NestedString(mapAt(c.Object, m.segs), "metadata", kind, m.Key)
	return got == m.Value
}

// ChangedMarkers lists the reserved markers an update adds, changes or
// removes: the new site, or the old one for a removal.
func ChangedMarkers(old, new *unstructured.Unstructured) []MarkerSite {
	before := map[string]MarkerSite{}
	for _, m := range KueueMarkers(old) {
		before[m.id()] = m
	}
	var out []MarkerSite
	for _, m := range KueueMarkers(new) {
		if b, ok := before[m.id()]; !ok || b.Value != m.Value {
			out = append(out, m)
		}
		delete(before, m.id())
	}
	for _, m := range before {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b MarkerSite) int { return cmp.Compare(a.id(), b.id()) })
	return out
}

// mapAt follows a walk's path to the map it names, nil when it is not one.
func mapAt(root map[string]any, segs []segment) map[string]any {
	var node any = root
	for _, s := range segs {
		switch n := node.(type) {
		case map[string]any:
			node = n[s.key]
		case []any:
			if s.index < 0 || s.index >= len(n) {
				return nil
			}
			node = n[s.index]
		default:
			return nil
		}
	}
	m, _ := node.(map[string]any)
	return m
}
