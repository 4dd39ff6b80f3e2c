package schedsim

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schedcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler/flavorassigner"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
)

// judge runs Kueue's flavor assignment on the cluster as it is and, when the
// workload does not get in, on the cluster with nothing admitted: what fits
// there only waits; what does not fit there never gets in.
func (s *Simulator) judge(ctx context.Context, info *kueueworkload.Info, r *Result) *Result {
	a, targets := s.assign(ctx, info, s.now)
	mode := a.RepresentativeMode()
	if mode == flavorassigner.Fit || (mode == flavorassigner.Preempt && len(targets) > 0) {
		if r.Ahead != nil && r.Ahead.Blocking > 0 {
			s.placed(r, a)
			return r.wait(kueue.WorkloadQuotaReservedReasonWaitingForQuota, fmt.Sprintf(
				"%d workload(s) ahead of it in StrictFIFO ClusterQueue %s are pending", r.Ahead.Blocking, r.ClusterQueue))
		}
		s.placed(r, a)
		if len(targets) > 0 {
			s.placedAfter(ctx, r, info, targets)
		}
		for _, t := range targets {
			r.Preempts = append(r.Preempts, Victim{Namespace: t.WorkloadInfo.Obj.Namespace, Name: t.WorkloadInfo.Obj.Name,
				ClusterQueue: string(t.WorkloadInfo.ClusterQueue), Reason: t.Reason})
		}
		slices.SortFunc(r.Preempts, func(x, y Victim) int {
			return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
		})
		r.Verdict = Now
		return r
	}
	free, _ := s.assign(ctx, info, s.empty)
	if free.RepresentativeMode() == flavorassigner.NoFit {
		return r.never(free.NoFitReason, free.Message())
	}
	// What it would get once quota frees, and what is missing for it now.
	s.placed(r, free)
	r.Missing = shortfall(free, s.now.ClusterQueue(info.ClusterQueue))
	reason := a.NoFitReason
	if mode == flavorassigner.Preempt || reason == "" {
		reason = kueue.WorkloadQuotaReservedReasonWaitingForQuota
	}
	return r.wait(reason, a.Message())
}

// assign is Kueue's getInitialAssignments (scheduler.go) without workload
// slices and topology: the full assignment, the preemption targets when it
// must preempt, and partial admission's reduced counts when the full one
// does not get in.
func (s *Simulator) assign(ctx context.Context, info *kueueworkload.Info, snap *schedcache.Snapshot) (flavorassigner.Assignment, []*preemption.Target) {
	cq := snap.ClusterQueue(info.ClusterQueue)
	fa := flavorassigner.New(info, cq, snap.ResourceFlavors, s.fairShare, preemption.NewOracle(s.preemptor, snap),
		nil, s.strategy, resources.NewResourceFormatter(), 0)
	full := fa.Assign(ctx, nil)
	switch full.RepresentativeMode() {
	case flavorassigner.Fit:
		return full, nil
	case flavorassigner.Preempt:
		if targets := s.preemptor.GetTargets(ctx, *info, full, snap); len(targets) > 0 {
			return full, targets
		}
	}
	if !features.Enabled(features.PartialAdmission) || !info.CanBePartiallyAdmitted() {
		return full, nil
	}
	type partial struct {
		a       flavorassigner.Assignment
		targets []*preemption.Target
	}
	reducer := flavorassigner.NewPodSetReducer(info.Obj.Spec.PodSets, func(counts []int32) (*partial, bool) {
		a := fa.Assign(ctx, counts)
		switch a.RepresentativeMode() {
		case flavorassigner.Fit:
			return &partial{a: a}, true
		case flavorassigner.Preempt:
			if targets := s.preemptor.GetTargets(ctx, *info, a, snap); len(targets) > 0 {
				return &partial{a: a, targets: targets}, true
			}
		}
		return nil, false
	})
	if p, ok := reducer.Search(); ok {
		return p.a, p.targets
	}
	return full, nil
}

// placed records an assignment's flavors per pod set, as Kueue writes them
// to the Workload's status.admission.
func (s *Simulator) placed(r *Result, a flavorassigner.Assignment) {
	r.PodSets = nil
	for _, ps := range a.ToAPI(logr.Discard()) {
		flavors := map[string]string{}
		for res, f := range ps.Flavors {
			flavors[string(res)] = string(f)
		}
		count := int32(0)
		if ps.Count != nil {
			count = *ps.Count
		}
		r.PodSets = append(r.PodSets, PodSetFlavors{Name: string(ps.Name), Count: count, Flavors: flavors})
	}
	r.Borrows = a.RequiresBorrowing()
}

// placedAfter records the flavors Kueue gives the workload once the targets
// are evicted: it admits it in a later cycle, with a new assignment on the
// cluster without them, which may choose other flavors than the one that
// asked for the preemption.
func (s *Simulator) placedAfter(ctx context.Context, r *Result, info *kueueworkload.Info, targets []*preemption.Target) {
	victims := make([]*kueueworkload.Info, len(targets))
	for i, t := range targets {
		victims[i] = t.WorkloadInfo
	}
	restore := s.now.SimulateWorkloadRemoval(victims)
	defer restore()
	if after, _ := s.assign(ctx, info, s.now); after.RepresentativeMode() == flavorassigner.Fit {
		s.placed(r, after)
	}
}

// shortfall is what a ClusterQueue lacks now of what the assignment on the
// empty cluster would take: per flavor and resource, the request and what
// is available to it now (its own unused quota and what it may borrow).
func shortfall(free flavorassigner.Assignment, cq *schedcache.ClusterQueueSnapshot) []Shortfall {
	var out []Shortfall
	format := (*resources.ResourceFormatter)(nil)
	for fr, need := range free.Usage.Quota {
		avail := cq.Available(fr)
		if need.Cmp(avail) <= 0 {
			continue
		}
		out = append(out, Shortfall{Flavor: string(fr.Flavor), Resource: string(fr.Resource),
			Requested: format.ResourceQuantityString(fr.Resource, need.Int64()),
			Available: format.ResourceQuantityString(fr.Resource, max(avail.Int64(), 0))})
	}
	slices.SortFunc(out, func(x, y Shortfall) int {
		return cmp.Or(cmp.Compare(x.Flavor, y.Flavor), cmp.Compare(x.Resource, y.Resource))
	})
	return out
}
