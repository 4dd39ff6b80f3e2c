package audit

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
	workloadfinish "sigs.k8s.io/kueue/pkg/workload/finish"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/schedsim"
)

// Why report identity: `kueue-guard why -o json` is a contract like the
// review's; fields are only added.
const (
	WhyAPIVersion = "why.kueue-guard.io/v1alpha1"
	WhyKind       = "Why"
)

// Causes, the first that applies: what keeps a workload where it is.
const (
	CauseAdmitted   = "admitted"    // Kueue admitted it
	CauseFinished   = "finished"    // it is done
	CauseNoWorkload = "no-workload" // Kueue made no Workload of it (no queue, not managed)
	CauseNever      = "never"       // Kueue can never admit it as the cluster stands
	CausePolicy     = "policy"      // kueue-guard's rules or policies flag it
	CauseInactive   = "inactive"    // its LocalQueue or ClusterQueue admits nothing
	CauseQuota      = "quota"       // its ClusterQueue lacks quota now
	CauseAhead      = "ahead"       // it fits, but others come first
	CauseNext       = "next"        // Kueue would admit it in its next cycle
)

// WhyReport is `kueue-guard why`'s answer, one entry per workload.
type WhyReport struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Answers    []*WhyAnswer `json:"answers"`
	Notes      []string     `json:"notes"`
}

// WhyAnswer joins, for one workload, Kueue's own account (its Workload and
// ClusterQueue), what simulate computes for it, and the policies' findings.
type WhyAnswer struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Cause is one of the Cause constants; Summary says it in a sentence.
	Cause   string `json:"cause"`
	Summary string `json:"summary"`
	// Workload is Kueue's Workload of it (nil: none).
	Workload *WorkloadAccount `json:"workload,omitempty"`
	// ClusterQueue is its ClusterQueue's status.
	ClusterQueue *ClusterQueueAccount `json:"clusterQueue,omitempty"`
	// Simulation is Kueue's scheduler asked about the pending Workload now.
	Simulation *schedsim.Result `json:"simulation,omitempty"`
	// Status, Findings and Warnings are the audit's judgement of it.
	Status   string           `json:"status"`
	Findings []review.Finding `json:"findings"`
	Warnings []string         `json:"warnings"`
}

// WorkloadAccount is what Kueue says on the Workload.
type WorkloadAccount struct {
	Name       string             `json:"name"`
	QueueName  string             `json:"queueName"`
	Priority   int32              `json:"priority"`
	Conditions []metav1.Condition `json:"conditions"`
	Admission  *kueue.Admission   `json:"admission,omitempty"`
}

// ClusterQueueAccount is what Kueue says on the ClusterQueue.
type ClusterQueueAccount struct {
	Name               string `json:"name"`
	Active             bool   `json:"active"`
	Message            string `json:"message,omitempty"`
	PendingWorkloads   int32  `json:"pendingWorkloads"`
	ReservingWorkloads int32  `json:"reservingWorkloads"`
}

// ParseTarget reads NAMESPACE/KIND/NAME, KIND a catalog kind in any case,
// optionally with its group ("job", "Job.batch", "jobset.jobset.x-k8s.io").
func ParseTarget(s string) (string, *integrations.Integration, string, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", nil, "", fmt.Errorf("%q: want NAMESPACE/KIND/NAME, such as team-a/job/train", s)
	}
	kind, group, grouped := strings.Cut(parts[1], ".")
	var found []*integrations.Integration
	for _, in := range integrations.All() {
		if strings.EqualFold(in.GVK.Kind, kind) && (!grouped || strings.EqualFold(in.GVK.Group, group)) {
			found = append(found, in)
		}
	}
	switch len(found) {
	case 0:
		return "", nil, "", fmt.Errorf("%q: %s is not a kind Kueue admits", s, parts[1])
	case 1:
		return parts[0], found[0], parts[2], nil
	}
	return "", nil, "", fmt.Errorf("%q: %s names several kinds: add the group (%s)", s, parts[1],
		integrations.GroupKindKey(found[0].GVK.GroupKind()))
}

// answer builds one workload's answer from the audit's object, the state's
// Workloads and Kueue's scheduler.
func answer(ctx context.Context, u *unstructured.Unstructured, o *review.Object, state *review.State, sim *schedsim.Simulator) *WhyAnswer {
	a := &WhyAnswer{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Status: o.Status,
		Findings: o.Findings, Warnings: o.Warnings}
	wl := ownedWorkload(state.Workloads(), u)
	if wl == nil {
		a.Cause, a.Summary = CauseNoWorkload, "Kueue has made no Workload of it: it has no queue, or Kueue does not manage it"
		if f := flagged(o); f != nil {
			a.Summary += "; " + f.Rule + ": " + f.Message
		}
		return a
	}
	a.Workload = &WorkloadAccount{Name: wl.Name, QueueName: string(wl.Spec.QueueName), Priority: ptr.Deref(wl.Spec.Priority, 0),
		Conditions: wl.Status.Conditions, Admission: wl.Status.Admission}
	switch {
	case workloadfinish.IsFinished(wl):
		a.Cause, a.Summary = CauseFinished, "finished"
		return a
	case kueueworkload.HasQuotaReservation(wl) && wl.Status.Admission != nil:
		a.ClusterQueue = clusterQueueAccount(state, string(wl.Status.Admission.ClusterQueue))
		a.Cause, a.Summary = CauseAdmitted, "admitted to ClusterQueue "+string(wl.Status.Admission.ClusterQueue)
		return a
	}
	r := sim.SimulateWorkload(ctx, wl)
	a.Simulation = r
	a.ClusterQueue = clusterQueueAccount(state, r.ClusterQueue)
	a.Cause, a.Summary = cause(r, flagged(o))
	return a
}

// cause is the first reason that applies to a pending Workload: Kueue can
// never admit it; a rule or policy flags it; its queue admits nothing; it
// lacks quota; others come first; nothing (Kueue's next cycle takes it).
func cause(r *schedsim.Result, f *review.Finding) (string, string) {
	switch {
	case r.Verdict == schedsim.Never:
		return CauseNever, fmt.Sprintf("Kueue can never admit it: %s", reasonText(r))
	case f != nil:
		return CausePolicy, fmt.Sprintf("%s %s: %s", f.Enforcement, f.Rule, f.Message)
	case r.Verdict == schedsim.Wait && r.Reason == kueue.WorkloadQuotaReservedReasonSuspended:
		return CauseInactive, r.Message
	case r.Verdict == schedsim.Wait && len(r.Missing) > 0:
		var parts []string
		for _, m := range r.Missing {
			parts = append(parts, fmt.Sprintf("%s of flavor %s: needs %s, %s available", m.Resource, m.Flavor, m.Requested, m.Available))
		}
		s := fmt.Sprintf("ClusterQueue %s lacks quota now: %s", r.ClusterQueue, strings.Join(parts, "; "))
		if r.Ahead != nil && r.Ahead.ClusterQueue > 0 {
			s += fmt.Sprintf("; %d workload(s) ahead of it", r.Ahead.ClusterQueue)
		}
		return CauseQuota, s
	case r.Verdict == schedsim.Wait:
		return CauseAhead, fmt.Sprintf("it fits, but %s", r.Message)
	}
	return CauseNext, "it fits now: Kueue admits it in its next scheduling cycle"
}

func reasonText(r *schedsim.Result) string {
	if r.Reason == "" {
		return r.Message
	}
	return r.Reason + ": " + r.Message
}

// flagged is the audit's first denial, else its first warning, else nil.
func flagged(o *review.Object) *review.Finding {
	for _, want := range []string{"deny", "warn"} {
		for i := range o.Findings {
			if o.Findings[i].Enforcement == want {
				return &o.Findings[i]
			}
		}
	}
	return nil
}

// ownedWorkload is the Workload Kueue made of u: the one it owns by uid.
func ownedWorkload(wls []kueue.Workload, u *unstructured.Unstructured) *kueue.Workload {
	for i := range wls {
		if wls[i].Namespace != u.GetNamespace() {
			continue
		}
		for _, ref := range wls[i].OwnerReferences {
			if ref.UID == u.GetUID() {
				return &wls[i]
			}
		}
	}
	return nil
}

func clusterQueueAccount(state *review.State, name string) *ClusterQueueAccount {
	cq, ok := state.Snapshot.ClusterQueue(name)
	if !ok {
		return nil
	}
	a := &ClusterQueueAccount{Name: name, PendingWorkloads: cq.Status.PendingWorkloads, ReservingWorkloads: cq.Status.ReservingWorkloads}
	if c := meta.FindStatusCondition(cq.Status.Conditions, kueue.ClusterQueueActive); c != nil {
		a.Active, a.Message = c.Status == metav1.ConditionTrue, c.Message
	}
	return a
}
