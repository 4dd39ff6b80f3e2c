package cluster

import (
	"context"
	"errors"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// OnHold reports a LocalQueue's or ClusterQueue's stopPolicy that holds it
// (Hold, HoldAndDrain): Kueue admits nothing from it until it resumes.
func OnHold(p *kueue.StopPolicy) bool {
	return p != nil && (*p == kueue.Hold || *p == kueue.HoldAndDrain)
}

// PodDefaultPriority keys the globalDefault PriorityClass's value among the
// pods' priorities (SchedulingState.PodPriorities).
const PodDefaultPriority = ""

// SchedulingState is what Kueue's scheduler reads, for a simulation: the
// Kueue objects, its Workloads and the values of the priority classes
// (PodPriorities keys the globalDefault PriorityClass's value by "").
type SchedulingState struct {
	KueueObjects
	Workloads          []kueue.Workload
	WorkloadPriorities map[string]int32
	PodPriorities      map[string]int32
}

// Kinds whose changes move the scheduling generation: what Kueue's
// scheduler reads.
var (
	workloadGVK              = kueue.SchemeGroupVersion.WithKind("Workload")
	workloadPriorityClassGVK = kueue.SchemeGroupVersion.WithKind("WorkloadPriorityClass")
	schedulingInput          = map[schema.GroupVersionKind]bool{
		kueue.SchemeGroupVersion.WithKind("LocalQueue"): true, kueue.SchemeGroupVersion.WithKind("ClusterQueue"): true,
		kueue.SchemeGroupVersion.WithKind("ResourceFlavor"): true, kueue.SchemeGroupVersion.WithKind("Cohort"): true,
		workloadGVK: true, workloadPriorityClassGVK: true,
	}
)

// schedulingOnly are Kueue kinds the view caches for simulations only: their
// informers do not hold up QueuesKnown (a large cluster's Workloads take the
// longest to list).
func schedulingOnly(gvk schema.GroupVersionKind) bool {
	return gvk == workloadGVK || gvk == workloadPriorityClassGVK
}

// schedulingBump counts every change of what Kueue's scheduler reads.
func (v *InformerView) schedulingBump() toolscache.ResourceEventHandlerFuncs {
	return countEvents(&v.schedGeneration)
}

// watchPriorityClasses counts the PriorityClasses' changes in the scheduling
// generation.
func (v *InformerView) watchPriorityClasses(ctx context.Context) error {
	inf, err := v.cache.GetInformer(ctx, &schedulingv1.PriorityClass{})
	if err != nil {
		return fmt.Errorf("registering informer for PriorityClasses: %w", err)
	}
	_, err = inf.AddEventHandler(v.schedulingBump())
	return err
}

// SchedulingGeneration implements View: it moves with every change of the
// scheduling state; known is false while Kueue's kinds or Workloads cannot be
// read.
func (v *InformerView) SchedulingGeneration() (int64, bool) {
	known := v.QueuesKnown() && v.optionalReady(workloadGVK) == nil && v.optionalReady(workloadPriorityClassGVK) == nil
	return v.schedGeneration.Load(), known
}

// SchedulingState implements View: one listing of the cache, copied (Kueue's
// scheduler cache keeps the Workloads it is given; it runs at most once a
// second, see simwarn).
func (v *InformerView) SchedulingState() (*SchedulingState, error) {
	ctx := context.Background()
	var (
		rfs     kueue.ResourceFlavorList
		cohorts kueue.CohortList
		cqs     kueue.ClusterQueueList
		lqs     kueue.LocalQueueList
		wls     kueue.WorkloadList
		wpcs    kueue.WorkloadPriorityClassList
		pcs     schedulingv1.PriorityClassList
	)
	for _, l := range []client.ObjectList{&rfs, &cohorts, &cqs, &lqs, &wls, &wpcs, &pcs} {
		if err := v.cache.List(ctx, l); err != nil {
			return nil, err
		}
	}
	s := &SchedulingState{KueueObjects: KueueObjects{Flavors: rfs.Items, Cohorts: cohorts.Items, ClusterQueues: cqs.Items,
		LocalQueues: lqs.Items}, Workloads: wls.Items, WorkloadPriorities: map[string]int32{}, PodPriorities: map[string]int32{}}
	for _, pc := range wpcs.Items {
		s.WorkloadPriorities[pc.Name] = pc.Value
	}
	for _, pc := range pcs.Items {
		s.PodPriorities[pc.Name] = pc.Value
		if pc.GlobalDefault {
			s.PodPriorities[PodDefaultPriority] = pc.Value
		}
	}
	return s, nil
}

// SchedulingGeneration implements View: a snapshot holds no Workloads, so
// the server's simulations do not run on it (`kueue-guard simulate` builds
// its own state).
func (s *Snapshot) SchedulingGeneration() (int64, bool) { return 0, false }

// SchedulingState implements View.
func (s *Snapshot) SchedulingState() (*SchedulingState, error) {
	return nil, errors.New("a snapshot holds no Workloads")
}
