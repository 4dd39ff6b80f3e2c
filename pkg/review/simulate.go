package review

import (
	"context"
	"errors"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/schedsim"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// Simulation is Kueue's verdict on an allowed workload (simulate): what its
// scheduler would do with it, submitted now, alone.
type Simulation struct {
	schedsim.Result
	// Of says which part of the object Kueue admits at once, when not all of
	// it ("one pod" of a Deployment, "one group" of a LeaderWorkerSet).
	Of string `json:"of,omitempty"`
	// Priority is the priority Kueue gives it, and the class it comes from.
	Priority      int32  `json:"priority"`
	PriorityClass string `json:"priorityClass,omitempty"`
}

// ListWorkloads adds what simulate reads of a live cluster besides the review's
// state: Kueue's Workloads (its usage and its queues) and the PriorityClasses
// that give pods their priority. Through the live reader and its policy: a
// cluster without Kueue has no Workloads.
func ListWorkloads(ctx context.Context, cfg *rest.Config, s *State) error {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	r, err := live.New(cfg)
	if err != nil {
		return err
	}
	wls, err := live.ListAs[kueue.Workload](ctx, r, kueue.SchemeGroupVersion.WithKind("Workload"), live.Options{})
	if err != nil && !errors.Is(err, live.ErrNotServed) {
		return err
	}
	for _, wl := range wls {
		s.workloads = append(s.workloads, *wl)
	}
	pcs, err := live.ListAs[schedulingv1.PriorityClass](ctx, r, schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), live.Options{})
	if err != nil {
		return err
	}
	for _, pc := range pcs {
		s.addPodPriority(pc)
	}
	return nil
}

// addPriorityClass reads a PriorityClass of a state file.
func (s *State) addPriorityClass(obj *unstructured.Unstructured) (string, error) {
	if gvk := obj.GroupVersionKind(); gvk.Kind != "PriorityClass" || gvk.Version != "v1" {
		return "", fmt.Errorf("unsupported %s: use %s PriorityClass", kindString(gvk), schedulingv1.SchemeGroupVersion)
	}
	pc := &schedulingv1.PriorityClass{}
	note, err := convert(obj, pc)
	if err == nil {
		s.addPodPriority(pc)
	}
	return note, err
}

func (s *State) addPodPriority(pc *schedulingv1.PriorityClass) {
	s.podPriorities[pc.Name] = pc.Value
	if pc.GlobalDefault {
		s.podPriorities[schedsim.PodDefaultPriority] = pc.Value
	}
}

// priorities are the state's priority classes' values.
func (s *State) priorities() schedsim.Priorities {
	p := schedsim.Priorities{Workload: map[string]int32{}, Pod: s.podPriorities}
	for name, pc := range s.priorityClasses {
		p.Workload[name] = pc.Value
	}
	return p
}

// Simulator builds Kueue's scheduler view of the state as it stands: its
// Kueue objects, Workloads and Kueue's Configuration.
func (s *State) Simulator(ctx context.Context) (*schedsim.Simulator, error) {
	kcfg, _ := s.Snapshot.KueueConfig()
	sim, err := schedsim.New(ctx, schedsim.Cluster{KueueObjects: s.Snapshot.KueueObjects(), Workloads: s.workloads,
		Namespace: s.Snapshot.Namespace, Kueue: kcfg})
	if err != nil {
		return nil, fmt.Errorf("building Kueue's scheduler view of the cluster state: %w", err)
	}
	return sim, nil
}

// Workloads are the state's Kueue Workloads (shared: not to be modified).
func (s *State) Workloads() []kueue.Workload { return s.workloads }

// simulator is the state's simulator, built once per review (after the
// manifests' own queues have joined the state).
func (r *reviewer) simulator(ctx context.Context) (*schedsim.Simulator, error) {
	if r.sim == nil {
		sim, err := r.state.Simulator(ctx)
		if err != nil {
			return nil, err
		}
		r.sim = sim
	}
	return r.sim, nil
}

// simulate asks Kueue's scheduler about an allowed workload as the API
// server would store it (final: the mutating webhook's patch applied). A
// workload without a queue is Kueue's only under manageJobsWithoutQueueName,
// and then no queue admits it.
func (r *reviewer) simulate(ctx context.Context, final *unstructured.Unstructured, in *integrations.Integration, o *Object) {
	if workload.QueueName(final, in) == "" {
		if kcfg, ok := r.state.Snapshot.KueueConfig(); ok && kcfg.ManageJobsWithoutQueueName {
			o.Simulation = &Simulation{Result: schedsim.Result{Verdict: schedsim.Never, Reason: kueue.WorkloadQuotaReservedReasonMisconfigured,
				Message: "no queue: Kueue holds it (manageJobsWithoutQueueName) and no queue admits it"}}
			return
		}
		o.Notes = append(o.Notes, "no queue: Kueue does not manage it, nothing to simulate")
		return
	}
	sim, err := r.simulator(ctx)
	if err != nil {
		o.Status, o.Reason = StatusError, err.Error()
		return
	}
	res, unit, err := sim.SimulateObject(ctx, final, cluster.SummaryOptions(r.state.Snapshot), r.state.priorities())
	if err != nil {
		o.Status, o.Reason = StatusError, err.Error()
		return
	}
	o.Simulation = &Simulation{Result: *res, Of: unit.Of, Priority: ptr.Deref(unit.Info.Obj.Spec.Priority, 0), PriorityClass: unit.Priority.Class}
}
