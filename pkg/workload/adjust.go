package workload

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
)

// adjustResources runs Kueue's own request adjustment (workload.AdjustResources:
// RuntimeClass overhead, then LimitRange container defaults, then limits as
// missing requests) over pod sets, reading LimitRanges and RuntimeClasses from
// res. Kueue applies it to every Workload before it charges quota, so a Job with
// no requests under a LimitRange is charged the LimitRange's defaults.
func adjustResources(ctx context.Context, namespace string, podSets []kueue.PodSet, res Resources) []kueue.PodSet {
	wl := &kueue.Workload{}
	wl.Namespace = namespace
	wl.Spec.PodSets = podSets
	kueueworkload.AdjustResources(ctx, resourcesReader{res: res}, wl)
	return wl.Spec.PodSets
}

// resourcesReader is the client AdjustResources reads through, over Resources:
// it answers the two reads AdjustResources makes (a RuntimeClass by name; the
// namespace's LimitRanges that have a container or pod limit, by Kueue's own index
// function) and refuses anything else. The embedded client is never set; a
// method AdjustResources does not call fails loudly rather than reaching an API
// server.
type resourcesReader struct {
	client.Client
	res Resources
}

// Get implements client.Reader for RuntimeClasses.
func (r resourcesReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	rc, ok := obj.(*nodev1.RuntimeClass)
	if !ok {
		return fmt.Errorf("resource adjustment cannot read %T", obj)
	}
	found, ok := r.res.RuntimeClass(key.Name)
	if !ok {
		return fmt.Errorf("RuntimeClass %q not found", key.Name)
	}
	found.DeepCopyInto(rc)
	return nil
}

// List implements client.Reader for a namespace's LimitRanges.
func (r resourcesReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lrs, ok := list.(*corev1.LimitRangeList)
	if !ok {
		return fmt.Errorf("resource adjustment cannot list %T", list)
	}
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	wantContainer := o.FieldSelector != nil && !o.FieldSelector.Empty()
	lrs.Items = nil
	for _, lr := range r.res.LimitRanges(o.Namespace) {
		if wantContainer && len(indexer.IndexLimitRangeHasContainerOrPodType(&lr)) == 0 {
			continue
		}
		lrs.Items = append(lrs.Items, *lr.DeepCopy())
	}
	return nil
}
