package workload

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
)

// Unit is one Workload Kueue's job controller would create for an object,
// ready for Kueue's scheduler: Info is Kueue's own accounting of it (requests
// adjusted, excluded resources dropped, transformations and DRA devices
// applied, as in Summarize), and Priority is where its priority comes from;
// the caller resolves the class to Info.Obj.Spec.Priority, because the
// classes are cluster state.
type Unit struct {
	Info     *kueueworkload.Info
	Priority Priority
	// Of says what part of the object the Workload is, when it is not all of
	// it: "one pod" (a Deployment) or "one group" (a LeaderWorkerSet).
	Of string
}

// KueueUnit computes the Workload of one admission unit of obj (see
// AdmissionUnit): the whole object, one pod of a Deployment, or one group of
// a LeaderWorkerSet, each as Kueue admits it. Its name is the object's; its
// queue is the object's queue label.
func KueueUnit(ctx context.Context, obj *unstructured.Unstructured, o Options) (*Unit, error) {
	in, pss, claims, err := kueuePodSetsOf(ctx, obj, podSetBuilders, &o)
	if err != nil {
		return nil, err
	}
	priority, err := priorityOf(obj, in, pss)
	if err != nil {
		return nil, fmt.Errorf("reading the priority class of %s %s: %w", obj.GetKind(), objectName(obj), err)
	}
	of := unitCounts(obj, pss)
	for i := range pss {
		// AdjustResources does this only where Resources are given.
		kueueworkload.UseLimitsAsMissingRequestsInPod(&pss[i].Template.Spec)
	}
	wl := &kueue.Workload{Spec: kueue.WorkloadSpec{PodSets: pss, QueueName: kueue.LocalQueueName(QueueName(obj, in))}}
	wl.Name, wl.Namespace, wl.UID = obj.GetName(), obj.GetNamespace(), obj.GetUID()
	if wl.Name == "" {
		wl.Name = obj.GetGenerateName()
	}
	info := kueueworkload.NewInfo(wl, kueueworkload.WithExcludedResourcePrefixes(o.Kueue.ExcludeResourcePrefixes),
		kueueworkload.WithResourceTransformations(o.Kueue.Transformations),
		kueueworkload.WithPreprocessedDRAResources(claims.requests, claims.replaced))
	return &Unit{Info: info, Priority: priority, Of: of}, nil
}

// unitCounts sets the pod sets' counts to one admission unit's, as
// admissionUnit reads it, and says which part of the object that is.
func unitCounts(obj *unstructured.Unstructured, pss []kueue.PodSet) string {
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		for i := range pss {
			pss[i].Count = 1
		}
		return "one pod"
	case schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}:
		size, found, _ := unstructured.NestedInt64(obj.Object, "spec", "leaderWorkerTemplate", "size")
		if !found || size < 1 {
			size = 1
		}
		for i := range pss {
			switch pss[i].Name {
			case lwsLeaderPodSetName:
				pss[i].Count = 1
			case lwsWorkerPodSetName:
				pss[i].Count = int32(size - 1)
			default:
				pss[i].Count = int32(size)
			}
		}
		return "one group"
	}
	return ""
}
