// Package schedsim asks Kueue's own scheduler what it would do with a
// workload submitted now: admit it (to which flavors, preempting whom), keep
// it waiting (for how much of what, behind how many), or never admit it. The
// flavor assigner, the preemptor, the cohort arithmetic and the queue order
// are Kueue's (v0.19 packages), fed a snapshot of Kueue's scheduler cache
// built from the cluster's Kueue objects and its admitted Workloads.
package schedsim

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schedcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption/fairsharing"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
	workloadfinish "sigs.k8s.io/kueue/pkg/workload/finish"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
)

// Verdict is what Kueue would do with the workload.
type Verdict string

const (
	// Now: Kueue admits it in its next scheduling cycle, after evicting the
	// workloads in Result.Preempts when there are any.
	Now Verdict = "now"
	// Wait: Kueue keeps it pending until quota frees or the workloads ahead
	// of it are admitted; with the ClusterQueue empty, it would be admitted.
	Wait Verdict = "wait"
	// Never: even with nothing else admitted in its cohort, Kueue would not
	// admit it (its quota, its flavors, its queues).
	Never Verdict = "never"
)

// Cluster is the Kueue state a simulation runs on.
type Cluster struct {
	cluster.KueueObjects
	// Workloads are the cluster's Workloads: those holding quota are its
	// usage, the pending ones are the queues' contents.
	Workloads []kueue.Workload
	// Namespace finds a namespace, for the ClusterQueues' namespaceSelector.
	Namespace func(name string) (*corev1.Namespace, bool)
	// Kueue is Kueue's Configuration (nil: its defaults).
	Kueue *cluster.KueueConfig
}

// Simulator holds the two views of Kueue's scheduler cache a verdict needs:
// the cluster as it is, and its structure with nothing admitted. It is safe
// for concurrent use: simulations take turns, because Kueue's preemptor
// edits the snapshot while it searches (and puts it back).
type Simulator struct {
	mu         sync.Mutex
	c          Cluster
	now, empty *schedcache.Snapshot
	preemptor  *preemption.Preemptor
	fairShare  bool
	strategy   configapi.QuotaCheckStrategy
	order      kueueworkload.Ordering
	localQs    map[localQueueKey]*kueue.LocalQueue
	clusterQs  map[string]*kueue.ClusterQueue
	pending    []*kueueworkload.Info
}

type localQueueKey struct{ namespace, name string }

// New builds the simulator's snapshots. An admitted Workload whose
// ClusterQueue is gone is left out, as Kueue's cache leaves it out.
func New(ctx context.Context, c Cluster) (*Simulator, error) {
	if c.Kueue == nil {
		c.Kueue = &cluster.KueueConfig{}
	}
	if c.Namespace == nil {
		c.Namespace = func(string) (*corev1.Namespace, bool) { return nil, false }
	}
	objs := c.KueueObjects
	objs.AssumeNamedFlavors = false
	opts := []schedcache.Option{
		schedcache.WithExcludedResourcePrefixes(c.Kueue.Resources.ExcludeResourcePrefixes),
		schedcache.WithResourceTransformations(c.Kueue.Resources.Transformations),
		schedcache.WithFairSharing(fairsharing.Enabled(c.Kueue.FairSharing)),
	}
	cache, err := cluster.NewKueueCache(ctx, objs, opts...)
	if err != nil {
		return nil, err
	}
	s := &Simulator{c: c, fairShare: fairsharing.Enabled(c.Kueue.FairSharing),
		localQs: map[localQueueKey]*kueue.LocalQueue{}, clusterQs: map[string]*kueue.ClusterQueue{}}
	if q := c.Kueue.Resources.QuotaCheckStrategy; q != nil {
		s.strategy = *q
	}
	if s.empty, err = cache.Snapshot(ctx); err != nil {
		return nil, err
	}
	log := logr.Discard()
	for i := range c.Workloads {
		wl := &c.Workloads[i]
		switch {
		case kueueworkload.HasActiveQuotaReservation(wl):
			cache.AddOrUpdateWorkload(log, wl)
		case queued(wl):
			s.pending = append(s.pending, kueueworkload.NewInfo(wl))
		}
	}
	if s.now, err = cache.Snapshot(ctx); err != nil {
		return nil, err
	}
	for i := range c.LocalQueues {
		lq := &c.LocalQueues[i]
		s.localQs[localQueueKey{lq.Namespace, lq.Name}] = lq
	}
	for i := range c.ClusterQueues {
		s.clusterQs[c.ClusterQueues[i].Name] = &c.ClusterQueues[i]
	}
	// Kueue's preemptor needs a client only to issue preemptions, which a
	// simulation never does.
	// Kueue's default requeuing timestamp (waitForPodsReady.requeuingStrategy).
	s.order = kueueworkload.Ordering{PodsReadyRequeuingTimestamp: configapi.EvictionTimestamp}
	s.preemptor = preemption.New(nil, s.order, nil, c.Kueue.FairSharing, false, clock.RealClock{}, nil, nil, nil)
	return s, nil
}

// queued reports whether a Workload without quota waits in a queue: active,
// not finished.
func queued(wl *kueue.Workload) bool {
	return kueueworkload.IsActive(wl) && !workloadfinish.IsFinished(wl) && wl.Spec.QueueName != ""
}

// Simulate is Kueue's verdict on one workload: a new one submitted now,
// alone (its Info from workload.KueueUnit, with its priority resolved), or
// a pending Workload of the cluster (by uid, it is not counted ahead of
// itself). The Info's ClusterQueue is set from its LocalQueue.
func (s *Simulator) Simulate(ctx context.Context, info *kueueworkload.Info) *Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	wl := info.Obj
	r := &Result{LocalQueue: string(wl.Spec.QueueName)}
	lq, ok := s.localQs[localQueueKey{wl.Namespace, string(wl.Spec.QueueName)}]
	if !ok {
		return r.never(kueue.WorkloadQuotaReservedReasonMisconfigured, fmt.Sprintf("LocalQueue %s doesn't exist", wl.Spec.QueueName))
	}
	r.ClusterQueue = string(lq.Spec.ClusterQueue)
	if cluster.OnHold(lq.Spec.StopPolicy) {
		// Kueue queues nothing of a held LocalQueue until an admin releases it.
		return r.wait(kueue.WorkloadQuotaReservedReasonSuspended, fmt.Sprintf("LocalQueue %s is on hold (stopPolicy %s)", lq.Name, *lq.Spec.StopPolicy))
	}
	info.ClusterQueue = lq.Spec.ClusterQueue
	cq, ok := s.clusterQs[r.ClusterQueue]
	if !ok {
		return r.never(kueue.WorkloadQuotaReservedReasonMisconfigured, fmt.Sprintf("ClusterQueue %s not found", r.ClusterQueue))
	}
	if s.now.InactiveClusterQueueSets.Has(info.ClusterQueue) || cluster.OnHold(cq.Spec.StopPolicy) {
		// An inactive queue (a flavor or admission check missing, held by
		// its stopPolicy) admits nothing until an admin mends it.
		return r.wait(kueue.WorkloadQuotaReservedReasonSuspended, fmt.Sprintf("ClusterQueue %s is inactive", r.ClusterQueue))
	}
	cqs := s.now.ClusterQueue(info.ClusterQueue)
	if cqs == nil {
		return r.never(kueue.WorkloadQuotaReservedReasonMisconfigured, fmt.Sprintf("ClusterQueue %s not found", r.ClusterQueue))
	}
	if msg := s.inadmissibleNamespace(wl.Namespace, cqs.NamespaceSelector); msg != "" {
		return r.never(kueue.WorkloadQuotaReservedReasonMisconfigured, msg)
	}
	if errs := kueueworkload.ValidateResources(info); len(errs) > 0 {
		return r.never(kueue.WorkloadQuotaReservedReasonMisconfigured, fmt.Sprintf("%s: %v", kueueworkload.ErrInvalidWLResources, errs.ToAggregate()))
	}
	r.Ahead = s.ahead(info, cq)
	return s.judge(ctx, info, r)
}

// SimulateWorkload is Simulate for a pending Workload of the cluster, its
// requests read as Kueue's cache reads them (the Configuration's excluded
// resources and transformations).
func (s *Simulator) SimulateWorkload(ctx context.Context, wl *kueue.Workload) *Result {
	return s.Simulate(ctx, kueueworkload.NewInfo(wl.DeepCopy(),
		kueueworkload.WithExcludedResourcePrefixes(s.c.Kueue.Resources.ExcludeResourcePrefixes),
		kueueworkload.WithResourceTransformations(s.c.Kueue.Resources.Transformations)))
}

// inadmissibleNamespace is Kueue's namespace check (workload.ValidateAdmissibility)
// with the ClusterQueue's namespaceSelector as Kueue's cache holds it.
func (s *Simulator) inadmissibleNamespace(namespace string, sel labels.Selector) string {
	ns, ok := s.c.Namespace(namespace)
	if !ok {
		return fmt.Sprintf("workload namespace %q does not exist", namespace)
	}
	if sel != nil && !sel.Matches(labels.Set(ns.Labels)) {
		return kueueworkload.ErrNamespaceMismatch.Error()
	}
	return ""
}
