package workload

import (
	"context"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
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
	kueueworkload.AdjustResources(ctx, kueueReader{res: res}, wl)
	return wl.Spec.PodSets
}
