package review

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// What the review knows about an object a placement refers to.
const (
	// KnownCluster: in the cluster state.
	KnownCluster = "cluster"
	// KnownManifest: defined by the reviewed manifests.
	KnownManifest = "manifest"
	// KnownMissing: the cluster state is authoritative and does not have it.
	KnownMissing = "missing"
	// KnownUnknown: no cluster state was given, so whether it exists is unknown.
	KnownUnknown = "unknown"
)

// Verdicts of a placement.
const (
	// VerdictFits: for every resource group the workload requests from, one
	// flavor's quota (nominal, plus the borrowing limit within a cohort) could
	// hold the whole workload.
	VerdictFits = "fits"
	// VerdictMayFit: no single flavor holds it, but the group's flavors together
	// could, if Kueue assigns its pod sets to different flavors.
	VerdictMayFit = "may-fit"
	// VerdictNeverFits: the ClusterQueue's quota can never admit it, even fully
	// borrowing, or a requested resource has no quota at all.
	VerdictNeverFits = "never-fits"
	// VerdictNoQueue: the workload has no queue; Kueue ignores it.
	VerdictNoQueue = "no-queue"
	// VerdictUnmanaged: Kueue does not manage the workload whatever its queue
	// (outside its managedJobsNamespaceSelector, a RayJob on an existing cluster).
	VerdictUnmanaged = "unmanaged"
	// VerdictQueueMissing: its LocalQueue or ClusterQueue does not exist.
	VerdictQueueMissing = "queue-missing"
	// VerdictUnknown: the queue is unknown without cluster state, or the
	// workload's requests could not be computed.
	VerdictUnknown = "unknown"
)

// CapacityUnknown is the capacity of a flavor of a ClusterQueue Kueue would not
// admit to as the state stands (a ResourceFlavor is missing, say): nothing is
// proven, so nothing is said not to fit.
const CapacityUnknown = "unknown"

// Placement is where a workload would land in Kueue (--explain): namespace →
// LocalQueue (and why) → ClusterQueue → the flavors whose quota could hold it.
type Placement struct {
	// Namespace, LocalQueue, ClusterQueue and PriorityClass are the chain the
	// workload goes through; a link is nil when the chain stops before it.
	Namespace     NamedState         `json:"namespace"`
	LocalQueue    *LocalQueuePlace   `json:"localQueue,omitempty"`
	ClusterQueue  *ClusterQueuePlace `json:"clusterQueue,omitempty"`
	PriorityClass *PriorityPlace     `json:"priorityClass,omitempty"`
	// TotalRequests is what the whole workload requests (Kueue's semantics).
	TotalRequests map[string]string `json:"totalRequests,omitempty"`
	// AdmitsAtOnce says, when it is less than the whole workload, what Kueue
	// admits at once (and so what each flavor below must hold): "one pod",
	// "one group", or "at least N pods" (partial admission).
	AdmitsAtOnce string `json:"admitsAtOnce,omitempty"`
	// Flavors are the ClusterQueue's flavors, per resource group the workload
	// requests from.
	Flavors []FlavorFit `json:"flavors"`
	// Uncovered are requested resources no resource group of the ClusterQueue covers.
	Uncovered []string `json:"uncovered,omitempty"`
	// Verdict is fits, may-fit, never-fits, no-queue, queue-missing or unknown.
	Verdict string `json:"verdict"`
	// Reason explains the verdict in a sentence.
	Reason string `json:"reason"`
}

// NamedState is an object's name and what the review knows of it: cluster,
// manifest, missing or unknown.
type NamedState struct {
	// Name is the object's name; State is KnownCluster, KnownManifest,
	// KnownMissing or KnownUnknown.
	Name  string `json:"name"`
	State string `json:"state"`
}

// LocalQueuePlace is the workload's LocalQueue and why it is that one.
type LocalQueuePlace struct {
	NamedState
	// Source is manifest (the label was set), namespace-annotation, rule/<name>
	// or kueue-default-localqueue.
	Source string `json:"source"`
	// Why explains Source in words.
	Why string `json:"why"`
	// StopPolicy is set when the queue holds its workloads.
	StopPolicy string `json:"stopPolicy,omitempty"`
}

// ClusterQueuePlace is the LocalQueue's ClusterQueue.
type ClusterQueuePlace struct {
	NamedState
	// Cohort decides whether flavors may borrow; StopPolicy is set when the
	// queue holds its workloads.
	Cohort     string `json:"cohort,omitempty"`
	StopPolicy string `json:"stopPolicy,omitempty"`
}

// PriorityPlace is the workload's WorkloadPriorityClass.
type PriorityPlace struct {
	NamedState
	// Value is the class's priority, when the class is known.
	Value *int32 `json:"value,omitempty"`
}

// FlavorFit is one flavor of a resource group and whether its quota could hold
// the whole workload.
type FlavorFit struct {
	// Name is the ResourceFlavor's name.
	Name string `json:"name"`
	// ResourceGroup is the index of the group in the ClusterQueue's spec.
	ResourceGroup int `json:"resourceGroup"`
	// State says whether the ResourceFlavor object is known (cluster, manifest,
	// missing, unknown).
	State string `json:"state"`
	// Fits reports whether this flavor alone could hold the whole workload;
	// Resources say why, resource by resource.
	Fits      bool          `json:"fits"`
	Resources []ResourceFit `json:"resources"`
}

// ResourceFit compares one requested resource with one flavor's quota.
type ResourceFit struct {
	// Resource is the resource name; Requested is the workload's total, and
	// Nominal the flavor's nominal quota ("0" when it has none), as quantities.
	Resource  string `json:"resource"`
	Requested string `json:"requested"`
	Nominal   string `json:"nominal"`
	// BorrowingLimit is the quota's borrowing limit, when set.
	BorrowingLimit string `json:"borrowingLimit,omitempty"`
	// Capacity is the most the flavor can give: nominal without a cohort,
	// nominal + borrowingLimit within one, or "unbounded".
	Capacity string `json:"capacity"`
	// Fits reports Requested <= Capacity.
	Fits bool `json:"fits"`
}

// queueSourceWhy explains where a queue came from.
func queueSourceWhy(source string) string {
	switch {
	case source == KnownManifest:
		return integrations.QueueNameLabel + " set in the manifest"
	case source == admission.SourceNamespaceAnnotation:
		return "namespace annotation " + admission.DefaultQueueAnnotation
	case source == admission.SourceKueueDefault:
		return `Kueue's default: the namespace's LocalQueue named "default"`
	case len(source) > len(admission.SourceRulePrefix) && source[:len(admission.SourceRulePrefix)] == admission.SourceRulePrefix:
		return "defaulting rule " + source[len(admission.SourceRulePrefix):]
	}
	return source
}

// explain computes where a workload would land. obj is the object after the
// mutating webhook (its queue label as the API server would store it).
func (r *reviewer) explain(ctx context.Context, obj *unstructured.Unstructured, in *integrations.Integration, ns string, defaulted *admission.QueueChoice) *Placement {
	p := &Placement{Namespace: NamedState{Name: ns, State: r.known("Namespace", "", ns, func() bool {
		_, ok := r.state.Snapshot.Namespace(ns)
		return ok
	})}, Flavors: []FlavorFit{}}

	if pc := workload.PriorityClass(obj, in); pc != "" {
		pp := &PriorityPlace{NamedState: NamedState{Name: pc}}
		wpc, ok := r.state.WorkloadPriorityClass(pc)
		pp.State = r.known("WorkloadPriorityClass", "", pc, func() bool { return ok })
		if ok {
			v := wpc.Value
			pp.Value = &v
		}
		p.PriorityClass = pp
	}

	// As the policies see it: adjusted by the namespace's LimitRanges and
	// RuntimeClasses, TrainJobs built from their runtimes, and Kueue's
	// resources configuration.
	sum, sumErr := workload.SummarizeWith(ctx, obj, cluster.SummaryOptions(r.state.Snapshot))
	if sumErr == nil {
		p.TotalRequests = quantities(sum.TotalRequests)
		switch {
		case sum.AdmissionUnit == workload.UnitPod:
			p.AdmitsAtOnce = "one pod"
		case sum.AdmissionUnit == workload.UnitGroup:
			p.AdmitsAtOnce = "one group"
		case sum.MinUnitPods < sum.UnitPods:
			p.AdmitsAtOnce = fmt.Sprintf("at least %d pods", sum.MinUnitPods)
		}
	}

	if why := admission.KueueIgnores(obj, ns, in, r.state.Snapshot); why != "" {
		p.Verdict, p.Reason = VerdictUnmanaged, why+": it runs outside quota, whatever its queue"
		return p
	}
	queue := workload.QueueName(obj, in)
	if queue == "" {
		p.Verdict = VerdictNoQueue
		p.Reason = "no " + integrations.QueueNameLabel + " and no default applies: Kueue ignores this workload"
		if !r.state.Known() {
			p.Verdict = VerdictUnknown
			p.Reason = "no " + integrations.QueueNameLabel + " among the manifests; the namespace's default queue in the cluster is unknown without cluster state"
		}
		return p
	}
	source := KnownManifest
	if defaulted != nil {
		source = defaulted.Source
	}
	lq, lqOK := r.state.Snapshot.LocalQueue(ns, queue)
	p.LocalQueue = &LocalQueuePlace{NamedState: NamedState{Name: queue, State: r.known("LocalQueue", ns, queue, func() bool { return lqOK })},
		Source: source, Why: queueSourceWhy(source)}
	if !lqOK {
		p.Verdict, p.Reason = r.missing(fmt.Sprintf("LocalQueue %q in namespace %q", queue, ns))
		return p
	}
	if cluster.OnHold(lq.Spec.StopPolicy) {
		p.LocalQueue.StopPolicy = string(*lq.Spec.StopPolicy)
	}
	cqName := string(lq.Spec.ClusterQueue)
	cq, cqOK := r.state.Snapshot.ClusterQueue(cqName)
	p.ClusterQueue = &ClusterQueuePlace{NamedState: NamedState{Name: cqName, State: r.known("ClusterQueue", "", cqName, func() bool { return cqOK })}}
	if !cqOK {
		p.Verdict, p.Reason = r.missing(fmt.Sprintf("ClusterQueue %q", cqName))
		return p
	}
	p.ClusterQueue.Cohort = string(cq.Spec.CohortName)
	if cluster.OnHold(cq.Spec.StopPolicy) {
		p.ClusterQueue.StopPolicy = string(*cq.Spec.StopPolicy)
	}
	if sumErr != nil {
		p.Verdict = VerdictUnknown
		p.Reason = "the workload's requests could not be computed: " + sumErr.Error()
		return p
	}
	r.fitFlavors(p, cq, sum)
	return p
}

// missing is the verdict for a queue object that is not in the state.
func (r *reviewer) missing(what string) (string, string) {
	if r.state.Known() {
		return VerdictQueueMissing, what + " does not exist: the workload stays pending"
	}
	return VerdictUnknown, what + " is unknown without cluster state (--cluster-state or --live-cluster)"
}

// known says what the review knows of an object: from the manifests, in the
// cluster state, missing from an authoritative state, or unknown.
func (r *reviewer) known(kind, ns, name string, found func() bool) string {
	switch {
	case r.state.FromManifests(kind, ns, name):
		return KnownManifest
	case found():
		return KnownCluster
	case r.state.Known():
		return KnownMissing
	}
	return KnownUnknown
}

// fitFlavors compares what Kueue must reserve at least for the workload (one
// admission unit at its minimum, as the fits-cluster-queue policy judges it)
// with each flavor's capacity: the same numbers the policy reads
// (cluster.View.ClusterQueueCapacity, Kueue's own arithmetic over the cohort
// tree). "pods" counts the workload's pods when the ClusterQueue covers it.
func (r *reviewer) fitFlavors(p *Placement, cq *kueue.ClusterQueue, sum *workload.Summary) {
	caps, capsKnown := r.state.Snapshot.ClusterQueueCapacity(cq.Name)
	capacityOf := map[[2]string]resource.Quantity{}
	for _, c := range caps {
		capacityOf[[2]string{c.Flavor, string(c.Resource)}] = c.Max
	}
	requested := map[corev1.ResourceName]resource.Quantity{}
	for name, q := range sum.MinUnitRequests {
		if q.Sign() > 0 {
			requested[name] = q
		}
	}
	covered := map[corev1.ResourceName]bool{}
	for _, g := range cq.Spec.ResourceGroups {
		for _, res := range g.CoveredResources {
			covered[res] = true
		}
	}
	if covered[corev1.ResourcePods] {
		var total int64
		for _, ps := range sum.PodSets {
			total += int64(ps.Count)
		}
		if total > 0 {
			if p.TotalRequests == nil {
				p.TotalRequests = map[string]string{}
			}
			p.TotalRequests[string(corev1.ResourcePods)] = resource.NewQuantity(total, resource.DecimalSI).String()
		}
		if sum.MinUnitPods > 0 {
			requested[corev1.ResourcePods] = *resource.NewQuantity(sum.MinUnitPods, resource.DecimalSI)
		}
	}
	for _, name := range sortedResourceNames(requested) {
		if !covered[name] {
			p.Uncovered = append(p.Uncovered, string(name))
		}
	}
	verdict := VerdictFits
	var short []string
	for gi, g := range cq.Spec.ResourceGroups {
		var wanted []corev1.ResourceName
		for _, res := range g.CoveredResources {
			if _, ok := requested[res]; ok {
				wanted = append(wanted, res)
			}
		}
		if len(wanted) == 0 {
			continue
		}
		anyFits := false
		// together is, per resource, the group's capacity over all flavors.
		together := map[corev1.ResourceName]*resource.Quantity{}
		unbounded := map[corev1.ResourceName]bool{}
		for _, f := range g.Flavors {
			_, rfOK := r.state.ResourceFlavor(string(f.Name))
			ff := FlavorFit{Name: string(f.Name), ResourceGroup: gi, Fits: true,
				State: r.known("ResourceFlavor", "", string(f.Name), func() bool { return rfOK })}
			for _, res := range wanted {
				req := requested[res]
				rf := ResourceFit{Resource: string(res), Requested: req.String(), Nominal: "0", Capacity: "0"}
				var quota *kueue.ResourceQuota
				for i := range f.Resources {
					if f.Resources[i].Name == res {
						quota = &f.Resources[i]
					}
				}
				if quota != nil {
					rf.Nominal = quota.NominalQuota.String()
					if quota.BorrowingLimit != nil {
						rf.BorrowingLimit = quota.BorrowingLimit.String()
					}
					capacity, ok := capacityOf[[2]string{string(f.Name), string(res)}]
					switch {
					case !capsKnown || !ok:
						// Kueue would not admit to this ClusterQueue as the
						// state stands (a flavor is missing): nothing proven.
						rf.Capacity = CapacityUnknown
						unbounded[res] = true
					default:
						rf.Capacity = capacity.String()
					}
					if together[res] == nil {
						zero := resource.MustParse("0")
						together[res] = &zero
					}
					together[res].Add(capacity)
					rf.Fits = rf.Capacity == CapacityUnknown || req.Cmp(capacity) <= 0
				}
				if !rf.Fits {
					ff.Fits = false
				}
				ff.Resources = append(ff.Resources, rf)
			}
			anyFits = anyFits || ff.Fits
			p.Flavors = append(p.Flavors, ff)
		}
		if anyFits {
			continue
		}
		groupMay := true
		for _, res := range wanted {
			if unbounded[res] {
				continue
			}
			req := requested[res]
			if t := together[res]; t == nil || req.Cmp(*t) > 0 {
				groupMay = false
				short = append(short, string(res))
			}
		}
		if groupMay {
			if verdict == VerdictFits {
				verdict = VerdictMayFit
			}
		} else {
			verdict = VerdictNeverFits
		}
	}
	if len(p.Uncovered) > 0 {
		verdict = VerdictNeverFits
	}
	p.Verdict = verdict
	switch verdict {
	case VerdictFits:
		p.Reason = fmt.Sprintf("ClusterQueue %q has a flavor whose quota could hold the whole workload", cq.Name)
		if p.ClusterQueue.StopPolicy != "" || (p.LocalQueue != nil && p.LocalQueue.StopPolicy != "") {
			p.Reason += ", but a queue is on hold: nothing is admitted until it resumes"
		}
	case VerdictMayFit:
		p.Reason = fmt.Sprintf("no single flavor of ClusterQueue %q could hold the whole workload; its pod sets would have to go to different flavors", cq.Name)
	case VerdictNeverFits:
		switch {
		case len(p.Uncovered) > 0:
			p.Reason = fmt.Sprintf("ClusterQueue %q has no quota for %v: Kueue cannot admit it", cq.Name, p.Uncovered)
		default:
			p.Reason = fmt.Sprintf("ClusterQueue %q can never provide enough %v, even borrowing fully", cq.Name, short)
		}
	}
}

func sortedResourceNames(m map[corev1.ResourceName]resource.Quantity) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func quantities(rl corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(rl))
	for k, v := range rl {
		out[string(k)] = v.String()
	}
	return out
}
