package workload

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/constants"
	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"
	"sigs.k8s.io/kueue/pkg/features"
	kueueutilpod "sigs.k8s.io/kueue/pkg/util/pod"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// The hold is what Kueue v0.19's own mutating webhook sets on a new workload it
// will admit, kind by kind (jobframework.ApplyDefaultForSuspend and the pod,
// Deployment, StatefulSet and LeaderWorkerSet webhooks' Default): a suspend
// field; a Pod's admission gate, managed label, finalizer and role hash; a pod
// template's pod-suspending-parent annotation, which makes Kueue's pod webhook
// gate every pod the template makes. Kueue's webhook runs once and is not
// reinvoked, so when it runs before kueue-guard's labels the workload it holds
// nothing; kueue-guard then sets the same hold itself. Kueue's process-wide
// feature gates (followed from its Configuration) decide the TAS parts, as in
// Kueue.

// templateHold is what Kueue writes into one pod template's metadata.
type templateHold struct {
	path        []string // the template's metadata
	labels      map[string]string
	annotations map[string]string
}

// podTemplateHolds are the templates Kueue's webhook marks for a
// pod-based kind, and what it writes there; nil for other kinds.
func podTemplateHolds(obj *unstructured.Unstructured, in *integrations.Integration) []templateHold {
	queueAndPriority := func() map[string]string {
		l := map[string]string{}
		if q := OwnLabel(obj, in, integrations.QueueNameLabel); q != "" {
			l[integrations.QueueNameLabel] = q
		}
		if p := OwnLabel(obj, in, integrations.PriorityClassLabel); p != "" {
			l[integrations.PriorityClassLabel] = p
		}
		return l
	}
	parent := map[string]string{podconstants.SuspendedByParentAnnotation: in.Framework}
	switch {
	case in.GVK.Group == "apps" && in.GVK.Kind == "Deployment":
		l := queueAndPriority()
		l[kueueconstants.ManagedByKueueLabelKey] = kueueconstants.ManagedByKueueLabelValue
		return []templateHold{{path: slices.Clone(in.PodTemplates[0]), labels: l, annotations: parent}}
	case in.GVK.Group == "apps" && in.GVK.Kind == "StatefulSet":
		return []templateHold{{path: slices.Clone(in.PodTemplates[0]), annotations: parent}}
	case in.GVK.Kind == "LeaderWorkerSet":
		return leaderWorkerSetHolds(obj, in, queueAndPriority())
	}
	return nil
}

// leaderWorkerSetHolds mirrors the LeaderWorkerSet webhook: both templates
// (the catalog's PodTemplates, leader then worker) carry the queue, the parent
// annotation and serving mode; with TAS on, the workers' pod indexes start
// after the leader's.
func leaderWorkerSetHolds(obj *unstructured.Unstructured, in *integrations.Integration, labels map[string]string) []templateHold {
	leaderMeta, workerMeta := in.PodTemplates[0], in.PodTemplates[1]
	annotations := func() map[string]string {
		return map[string]string{podconstants.SuspendedByParentAnnotation: in.Framework,
			podconstants.GroupServingAnnotationKey: podconstants.GroupServingAnnotationValue}
	}
	var out []templateHold
	_, hasLeader, _ := unstructured.NestedMap(obj.Object, leaderMeta[:len(leaderMeta)-1]...)
	if hasLeader {
		out = append(out, templateHold{path: slices.Clone(leaderMeta), labels: labels, annotations: annotations()})
	}
	worker := templateHold{path: slices.Clone(workerMeta), labels: labels, annotations: annotations()}
	workerAnn, _, _ := unstructured.NestedStringMap(obj.Object, append(slices.Clone(worker.path), "annotations")...)
	if _, grouped := workerAnn[kueue.PodSetGroupName]; features.Enabled(features.TopologyAwareScheduling) && hasLeader && !grouped {
		worker.annotations[kueue.PodIndexOffsetAnnotation] = "1"
	}
	return append(out, worker)
}

// holdField is the boolean field that suspends a kind, nil for the pod-based
// kinds (and for a CronJob: Kueue holds each Job it creates, not the CronJob).
func holdField(in *integrations.Integration) []string { return in.Suspension.Field }

// Holdable reports whether Kueue's webhook holds new workloads of the kind at
// all: every catalog kind but CronJob, whose Jobs it holds one by one.
func Holdable(in *integrations.Integration) bool {
	empty := &unstructured.Unstructured{Object: map[string]any{}}
	return holdField(in) != nil || in.Suspension.SchedulingGate != "" || podTemplateHolds(empty, in) != nil
}

// Held reports whether a new workload carries Kueue's hold, and if not, what
// is missing ("spec.suspend is not true").
func Held(obj *unstructured.Unstructured, in *integrations.Integration) (bool, string) {
	if f := holdField(in); f != nil {
		if v, _, _ := unstructured.NestedBool(obj.Object, f...); !v {
			return false, strings.Join(f, ".") + " is not true"
		}
		return true, ""
	}
	if g := in.Suspension.SchedulingGate; g != "" {
		if !HasSchedulingGate(obj, g) {
			return false, "spec.schedulingGates has no " + g
		}
		return true, ""
	}
	for _, t := range podTemplateHolds(obj, in) {
		ann, _, _ := unstructured.NestedStringMap(obj.Object, append(slices.Clone(t.path), "annotations")...)
		if ann[podconstants.SuspendedByParentAnnotation] != in.Framework {
			return false, fmt.Sprintf("%s.annotations has no %s: %s", strings.Join(t.path, "."),
				podconstants.SuspendedByParentAnnotation, in.Framework)
		}
	}
	return true, ""
}

// HoldsWhole reports whether Hold leaves obj as it was when it fails, so that
// it may hold the object a caller will use either way: a kind held by one
// field is (setValue walks the existing maps before it changes anything); a
// hold of several parts (a Pod's, a pod template's) may fail after its first.
func HoldsWhole(in *integrations.Integration) bool { return holdField(in) != nil }

// Hold sets Kueue's hold on a new workload of the kind, returning the patch;
// none when it is already held as Kueue would hold it.
func Hold(obj *unstructured.Unstructured, in *integrations.Integration) ([]jsonpatch.Operation, error) {
	if f := holdField(in); f != nil {
		return SetField(obj, f, true)
	}
	if in.Suspension.SchedulingGate != "" {
		return holdPod(obj, in)
	}
	var ops []jsonpatch.Operation
	for _, t := range podTemplateHolds(obj, in) {
		for _, kv := range []struct {
			name string
			m    map[string]string
		}{{"labels", t.labels}, {"annotations", t.annotations}} {
			for _, k := range slices.Sorted(maps.Keys(kv.m)) {
				o, err := setValue(obj, append(slices.Clone(t.path), kv.name), k, kv.m[k])
				if err != nil {
					return nil, err
				}
				ops = append(ops, o...)
			}
		}
	}
	return ops, nil
}

// holdPod mirrors Kueue's pod webhook for a pod it suspends itself.
func holdPod(obj *unstructured.Unstructured, in *integrations.Integration) ([]jsonpatch.Operation, error) {
	ops, err := AddSchedulingGate(obj, in.Suspension.SchedulingGate)
	if err != nil {
		return nil, err
	}
	add := func(o []jsonpatch.Operation, err error) error {
		ops = append(ops, o...)
		return err
	}
	if err := add(setValue(obj, []string{"metadata", "labels"}, kueueconstants.ManagedByKueueLabelKey, kueueconstants.ManagedByKueueLabelValue)); err != nil {
		return nil, err
	}
	if err := add(addFinalizer(obj, podconstants.PodFinalizer)); err != nil {
		return nil, err
	}
	if features.Enabled(features.TopologyAwareScheduling) {
		if err := add(gateTopology(obj)); err != nil {
			return nil, err
		}
	}
	var spec corev1.PodSpec
	raw, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, fmt.Errorf("reading the pod spec: %w", err)
	}
	hash, err := kueueutilpod.GenerateRoleHash(&spec)
	if err != nil {
		return nil, err
	}
	if err := add(setValue(obj, []string{"metadata", "annotations"}, podconstants.RoleHashAnnotation, hash)); err != nil {
		return nil, err
	}
	return ops, nil
}

// gateTopology adds TAS's gate, and the pod-index label the pod names, as
// Kueue's pod webhook does while TopologyAwareScheduling is on.
func gateTopology(obj *unstructured.Unstructured) ([]jsonpatch.Operation, error) {
	ops, err := AddSchedulingGate(obj, kueue.TopologySchedulingGate)
	if err != nil {
		return nil, err
	}
	if from, ok := obj.GetAnnotations()[kueue.PodGroupPodIndexLabelAnnotation]; ok {
		o, err := setValue(obj, []string{"metadata", "labels"}, kueue.PodGroupPodIndexLabel, obj.GetLabels()[from])
		if err != nil {
			return nil, err
		}
		ops = append(ops, o...)
	}
	return ops, nil
}

// addFinalizer adds a finalizer unless the object has it.
func addFinalizer(obj *unstructured.Unstructured, name string) ([]jsonpatch.Operation, error) {
	meta, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return nil, errors.New("metadata is not an object")
	}
	switch fins := meta["finalizers"].(type) {
	case nil:
		meta["finalizers"] = []any{name}
		return []jsonpatch.Operation{jsonpatch.NewOperation("add", "/metadata/finalizers", []any{name})}, nil
	case []any:
		if slices.Contains(fins, any(name)) {
			return nil, nil
		}
		meta["finalizers"] = append(fins, name)
		return []jsonpatch.Operation{jsonpatch.NewOperation("add", "/metadata/finalizers/-", name)}, nil
	default:
		return nil, errors.New("metadata.finalizers is not a list")
	}
}
