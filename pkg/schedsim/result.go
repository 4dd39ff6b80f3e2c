package schedsim

import (
	"time"

	"github.com/go-logr/logr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utilpriority "sigs.k8s.io/kueue/pkg/util/priority"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
)

// Result is Kueue's verdict on one workload, in Kueue's words where Kueue
// has them: Reason is the reason Kueue gives on the Workload's QuotaReserved
// condition (with its UnadmittedWorkloadsObservability gate; "Pending"
// without), Message its message.
type Result struct {
	Verdict      Verdict `json:"verdict"`
	Reason       string  `json:"reason,omitempty"`
	Message      string  `json:"message,omitempty"`
	LocalQueue   string  `json:"localQueue,omitempty"`
	ClusterQueue string  `json:"clusterQueue,omitempty"`
	// PodSets are the flavors Kueue assigns, per pod set: now, or for a
	// workload that waits, once its ClusterQueue's cohort is free.
	PodSets []PodSetFlavors `json:"podSets,omitempty"`
	// Borrows says the assignment borrows from the cohort.
	Borrows bool `json:"borrows,omitempty"`
	// Missing is what its ClusterQueue lacks now, for a workload that waits.
	Missing []Shortfall `json:"missing,omitempty"`
	// Ahead counts the pending workloads Kueue's queue order puts first.
	Ahead *Ahead `json:"ahead,omitempty"`
	// Preempts are the admitted workloads Kueue would evict to admit it.
	Preempts []Victim `json:"preempts,omitempty"`
}

// PodSetFlavors is one pod set's flavor per resource, and the pods admitted
// (fewer than asked under partial admission).
type PodSetFlavors struct {
	Name    string            `json:"name"`
	Count   int32             `json:"count"`
	Flavors map[string]string `json:"flavors"`
}

// Shortfall is one flavor's resource the workload needs more of than its
// ClusterQueue has available now.
type Shortfall struct {
	Flavor    string `json:"flavor"`
	Resource  string `json:"resource"`
	Requested string `json:"requested"`
	Available string `json:"available"`
}

// Ahead counts pending workloads ahead of it in Kueue's order (higher
// priority, or the same priority and queued earlier).
type Ahead struct {
	LocalQueue   int `json:"localQueue"`
	ClusterQueue int `json:"clusterQueue"`
	// Blocking is how many of them block it: all of them under StrictFIFO,
	// none under BestEffortFIFO (Kueue tries the next when one does not fit).
	Blocking int `json:"blocking,omitempty"`
}

// Victim is an admitted workload Kueue would preempt, and Kueue's reason.
type Victim struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	ClusterQueue string `json:"clusterQueue"`
	Reason       string `json:"reason"`
}

func (r *Result) never(reason, msg string) *Result {
	r.Verdict, r.Reason, r.Message = Never, reason, msg
	return r
}

func (r *Result) wait(reason, msg string) *Result {
	r.Verdict, r.Reason, r.Message = Wait, reason, msg
	return r
}

// ahead counts the pending workloads of the ClusterQueue that Kueue's queue
// order (cache/queue baseCompareFunc: priority, then queue timestamp, then
// uid) puts before the workload; one being simulated is queued now.
func (s *Simulator) ahead(info *kueueworkload.Info, cq *kueue.ClusterQueue) *Ahead {
	a := &Ahead{}
	log := logr.Discard()
	mine := utilpriority.EffectivePriority(log, info.Obj)
	myTime := time.Now()
	if t := s.order.GetQueueOrderTimestamp(info.Obj); !t.IsZero() {
		myTime = t.Time
	}
	for _, p := range s.pending {
		lq, ok := s.localQs[localQueueKey{p.Obj.Namespace, string(p.Obj.Spec.QueueName)}]
		if !ok || string(lq.Spec.ClusterQueue) != cq.Name || (info.Obj.UID != "" && p.Obj.UID == info.Obj.UID) {
			continue
		}
		if cluster.OnHold(lq.Spec.StopPolicy) {
			continue // Kueue queues nothing of a held LocalQueue
		}
		if theirs := utilpriority.EffectivePriority(log, p.Obj); theirs != mine {
			if theirs < mine {
				continue
			}
		} else if t := s.order.GetQueueOrderTimestamp(p.Obj).Time; t.After(myTime) || (t.Equal(myTime) && p.Obj.UID >= info.Obj.UID) {
			continue
		}
		a.ClusterQueue++
		if lq.Namespace == info.Obj.Namespace && p.Obj.Spec.QueueName == info.Obj.Spec.QueueName {
			a.LocalQueue++
		}
	}
	if cq.Spec.QueueingStrategy == kueue.StrictFIFO {
		a.Blocking = a.ClusterQueue
	}
	return a
}
