package schedsim

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// PodDefaultPriority keys the globalDefault PriorityClass's value in
// Priorities.Pod.
const PodDefaultPriority = cluster.PodDefaultPriority

// Priorities are the values of the cluster's priority classes: Kueue's
// WorkloadPriorityClasses and the pods' PriorityClasses.
type Priorities struct {
	Workload map[string]int32
	Pod      map[string]int32
}

// Resolve is a workload's priority as Kueue's job controller gives it
// (jobframework.ExtractPriority): its WorkloadPriorityClass's value, else
// its pods' PriorityClass's, else the globalDefault PriorityClass's, else 0.
// A class that does not exist is an error: Kueue makes no Workload of it.
func (p Priorities) Resolve(of workload.Priority) (int32, error) {
	switch of.Source {
	case workload.PrioritySourceWorkload:
		v, ok := p.Workload[of.Class]
		if !ok {
			return 0, fmt.Errorf("WorkloadPriorityClass %q does not exist: Kueue does not create the workload's Workload", of.Class)
		}
		return v, nil
	case workload.PrioritySourcePod:
		v, ok := p.Pod[of.Class]
		if !ok {
			return 0, fmt.Errorf("PriorityClass %q does not exist: the API server refuses the workload's pods", of.Class)
		}
		return v, nil
	}
	return p.Pod[PodDefaultPriority], nil
}

// SimulateObject is Simulate for an object of a catalog kind as the API
// server would store it: one admission unit of it (workload.KueueUnit), its
// priority resolved from p. A priority class that does not exist is a Never
// verdict, as Kueue never makes a Workload of it; an object whose pod sets
// cannot be computed is an error.
func (s *Simulator) SimulateObject(ctx context.Context, obj *unstructured.Unstructured, o workload.Options, p Priorities) (*Result, *workload.Unit, error) {
	unit, err := workload.KueueUnit(ctx, obj, o)
	if err != nil {
		return nil, nil, err
	}
	v, err := p.Resolve(unit.Priority)
	if err != nil { //nolint:nilerr // a missing class is Kueue's verdict, not a failure to simulate
		return &Result{Verdict: Never, Reason: kueue.WorkloadQuotaReservedReasonMisconfigured, Message: err.Error(),
			LocalQueue: string(unit.Info.Obj.Spec.QueueName)}, unit, nil
	}
	unit.Info.Obj.Spec.Priority = &v
	return s.Simulate(ctx, unit.Info), unit, nil
}
