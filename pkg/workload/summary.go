package workload

import (
	"context"
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/resources"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// PodSet is one group of identical pods, the unit in which Kueue reserves quota.
// Policies reason about pod sets rather than containers because that is what a
// ClusterQueue admits.
type PodSet struct {
	// Name is the pod set's name as Kueue gives it ("main", "launcher", "worker", …),
	// so messages can point at the same pod set a user sees in the Workload object.
	Name string
	// Count is the number of pods Kueue reserves quota for.
	Count int32
	// MinCount is the fewest pods Kueue may admit the pod set with (partial
	// admission: kueue.x-k8s.io/job-min-parallelism on a Job), or nil when the
	// pod set is admitted whole.
	MinCount *int32
	// Requests is what one pod of the set requests, with Kueue's semantics: limits
	// stand in for missing requests, init containers count by their maximum,
	// sidecars and pod overhead (spec.overhead) are added.
	Requests corev1.ResourceList
}

// Summary is a workload as Kueue sees it: the facts admission decisions and Rego
// policies (input.workload) need, computed once per request with Kueue's own
// rules so that a policy and Kueue never disagree about what a job asks for.
type Summary struct {
	// Kind is the object's group, version and kind.
	Kind schema.GroupVersionKind
	// Framework is the catalog's EffectiveFramework(): the Kueue integration that
	// decides whether Kueue manages this object (batch/job for a CronJob).
	Framework string
	// QueueName is the kueue.x-k8s.io/queue-name label, or "".
	QueueName string
	// PriorityClass is the kueue.x-k8s.io/priority-class label, or "".
	PriorityClass string
	// Priority is where Kueue takes the workload's priority from.
	Priority Priority
	// PodSets are the object's pod sets in Kueue's order.
	PodSets []PodSet
	// TotalRequests is the sum over pod sets of Requests × Count: what the whole
	// object asks of the cluster.
	TotalRequests corev1.ResourceList
	// AdmissionUnit is what Kueue admits at once: the whole workload, each pod
	// on its own (a Deployment), or each group on its own (a LeaderWorkerSet).
	AdmissionUnit AdmissionUnit
	// UnitRequests is what Kueue reserves for one admission unit at full size,
	// and MinUnitRequests at the fewest pods it may admit it with (partial
	// admission's minCount); they are equal when nothing is partial.
	UnitRequests, MinUnitRequests corev1.ResourceList
	// UnitPods and MinUnitPods are the pods of one admission unit, at full size
	// and at the minimum.
	UnitPods, MinUnitPods int64
	// PodSpecPaths are where the object keeps pod specs (see PodSpecPaths).
	PodSpecPaths [][]any
	// JobSpecPaths are where it keeps the Job specs it writes (see JobSpecPaths).
	JobSpecPaths [][]any
	// ClaimsUncounted says why Kueue would not count the devices the pods'
	// ResourceClaimTemplates claim (they are then in no request here), or is
	// "" when it counts them all, or there are none.
	ClaimsUncounted string
}

// AdmissionUnit is what Kueue admits as one Workload.
type AdmissionUnit string

const (
	// UnitWorkload: the object's pod sets are one Workload.
	UnitWorkload AdmissionUnit = "workload"
	// UnitPod: each pod is its own Workload (Deployment).
	UnitPod AdmissionUnit = "pod"
	// UnitGroup: each replica group is its own Workload (LeaderWorkerSet).
	UnitGroup AdmissionUnit = "group"
)

// ErrUnknownKind is wrapped by Summarize's error for kinds outside the
// integration catalog, so callers can tell "not a workload" (usually: skip) from
// "a workload we could not read" (usually: report) with errors.Is.
var ErrUnknownKind = errors.New("not a Kueue workload kind")

// Summarize computes the Summary of any catalog kind from its unstructured form.
//
// Pod sets come from Kueue's own job adapters (sigs.k8s.io/kueue/pkg/controller/jobs)
// wherever an adapter can run without a cluster; see podSetBuilders for the kinds
// that use a documented fallback instead. The object is first given the defaults
// the API server (or the framework's own defaulting webhook) would have applied to
// the fields pod-set arithmetic depends on, because manifests read from files are
// not defaulted and Kueue's adapters assume they are.
//
// Kinds whose pods Kueue admits as several Workloads are summarized as a whole:
// a Deployment's pod set counts all its replicas (Kueue admits each pod alone),
// a LeaderWorkerSet's pod sets count the leaders and workers of all its groups
// (Kueue admits each group alone).
//
// obj is never modified. A malformed object (a field of the wrong type, a null
// where an object belongs) yields an error, and so does any panic inside
// third-party code: one odd object must never take the webhook down.
func Summarize(ctx context.Context, obj *unstructured.Unstructured) (*Summary, error) {
	return summarize(ctx, obj, podSetBuilders, nil)
}

// Resources is what Kueue adjusts pod requests by before it charges them: the
// namespace's LimitRanges (container defaults) and RuntimeClasses (pod
// overhead). The server's informer view and the reviewer's snapshot provide it.
type Resources interface {
	// LimitRanges lists the LimitRanges of a namespace.
	LimitRanges(namespace string) []corev1.LimitRange
	// RuntimeClass returns a RuntimeClass by name.
	RuntimeClass(name string) (*nodev1.RuntimeClass, bool)
}

// Options is what Kueue's accounting of a workload depends on beyond the
// object itself.
type Options struct {
	// Resources, when set, adjusts requests as Kueue does in the object's
	// namespace (workload.AdjustResources: RuntimeClass overhead, LimitRange
	// defaults, limits as missing requests).
	Resources Resources
	// Kueue's Configuration resources section: resources Kueue ignores by
	// prefix, and how it transforms requests into the quantities it charges.
	Kueue configapi.Resources
	// Runtimes, when set, finds the runtime a TrainJob names, whose JobSet
	// template Kueue builds the TrainJob's pod sets from.
	Runtimes TrainingRuntimes
	// Claims, when set, finds the ResourceClaimTemplates the pods name, whose
	// devices Kueue charges (Kueue.DeviceClassMappings names them).
	Claims ClaimTemplates
}

// SummarizeWith is Summarize with Kueue's request adjustment and resource
// configuration applied, as Kueue applies them before it charges quota.
func SummarizeWith(ctx context.Context, obj *unstructured.Unstructured, o Options) (*Summary, error) {
	return summarize(ctx, obj, podSetBuilders, &o)
}

// summarize is Summarize with the builder table as a parameter, so tests can
// check panic containment with a builder that panics.
func summarize(ctx context.Context, obj *unstructured.Unstructured, builders map[schema.GroupKind]podSetsFunc, o *Options) (*Summary, error) {
	if o == nil {
		o = &Options{}
	}
	in, kueuePodSets, claims, err := kueuePodSetsOf(ctx, obj, builders, o)
	if err != nil {
		return nil, err
	}
	gvk := obj.GroupVersionKind()
	podSets, total, err := summarizePodSets(kueuePodSets, o.Kueue, claims)
	if err != nil {
		return nil, fmt.Errorf("computing requests of %s %s: %w", gvk.Kind, objectName(obj), err)
	}
	priority, err := priorityOf(obj, in, kueuePodSets)
	if err != nil {
		return nil, fmt.Errorf("reading the priority class of %s %s: %w", gvk.Kind, objectName(obj), err)
	}
	s := &Summary{
		Kind:            gvk,
		Framework:       in.EffectiveFramework(),
		QueueName:       QueueName(obj, in),
		PriorityClass:   PriorityClass(obj, in),
		Priority:        priority,
		PodSets:         podSets,
		TotalRequests:   total,
		PodSpecPaths:    PodSpecPaths(obj),
		JobSpecPaths:    JobSpecPaths(obj),
		ClaimsUncounted: claims.uncounted,
	}
	s.AdmissionUnit, s.UnitRequests, s.MinUnitRequests, s.UnitPods, s.MinUnitPods = admissionUnit(obj, podSets, total)
	return s, nil
}

// kueuePodSetsOf is Kueue's pod sets of obj, adjusted as Kueue adjusts them
// before it charges quota, with the DRA devices it charges them.
func kueuePodSetsOf(ctx context.Context, obj *unstructured.Unstructured, builders map[schema.GroupKind]podSetsFunc, o *Options) (
	*integrations.Integration, []kueue.PodSet, claimed, error) {
	if obj == nil || obj.Object == nil {
		return nil, nil, claimed{}, errors.New("summarizing workload: no object")
	}
	gvk := obj.GroupVersionKind()
	in, ok := integrations.Lookup(gvk.GroupKind())
	if !ok {
		return nil, nil, claimed{}, fmt.Errorf("summarizing %s: %w", integrations.GroupKindKey(gvk.GroupKind()), ErrUnknownKind)
	}
	if gvk.Version != in.GVK.Version {
		return nil, nil, claimed{}, fmt.Errorf("summarizing %s %s: version %s is not supported, use %s",
			gvk.Kind, objectName(obj), gvk.GroupVersion(), in.GVK.GroupVersion())
	}
	build, ok := builders[gvk.GroupKind()]
	if !ok {
		// The catalog grew without this package: a programming error, reported
		// instead of guessed at.
		return nil, nil, claimed{}, fmt.Errorf("summarizing %s: internal error: no pod-set builder for this kind", in.Key())
	}
	pss, err := computePodSets(ctx, obj, build, o)
	if err != nil {
		return nil, nil, claimed{}, fmt.Errorf("computing pod sets of %s %s: %w", gvk.Kind, objectName(obj), err)
	}
	if o.Resources != nil {
		pss = adjustResources(ctx, obj.GetNamespace(), pss, o.Resources)
	}
	return in, pss, claimRequests(ctx, obj.GetNamespace(), pss, o), nil
}

// computePodSets runs a builder with any panic turned into an error: the
// builders call third-party code that dereferences fields it expects the API
// server to have set.
func computePodSets(ctx context.Context, obj *unstructured.Unstructured, build podSetsFunc, o *Options) (ps []kueue.PodSet, err error) {
	defer func() {
		if r := recover(); r != nil {
			ps, err = nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	return build(ctx, obj, o)
}

// summarizePodSets turns Kueue pod sets into per-pod and total requests the way
// Kueue's workload.Info does, with the DRA devices Kueue charges them. The templates belong to the adapters' copies
// of a privately decoded object, so they are modified in place.
func summarizePodSets(in []kueue.PodSet, cfg configapi.Resources, claims claimed) ([]PodSet, corev1.ResourceList, error) {
	// One pod of each set, through Kueue's own workload.Info arithmetic (init
	// containers by their maximum, sidecars and overhead added, excluded
	// resources dropped, transformations applied), then scaled here with
	// overflow checks: a pod set of 0 pods still shows what one pod asks.
	one := &kueue.Workload{}
	one.Spec.PodSets = make([]kueue.PodSet, len(in))
	for i := range in {
		if in[i].Count < 0 {
			return nil, nil, fmt.Errorf("pod set %q: negative count %d", in[i].Name, in[i].Count)
		}
		one.Spec.PodSets[i] = in[i]
		one.Spec.PodSets[i].Count = 1
		kueueworkload.UseLimitsAsMissingRequestsInPod(&one.Spec.PodSets[i].Template.Spec)
	}
	info := kueueworkload.NewInfo(one, kueueworkload.WithExcludedResourcePrefixes(cfg.ExcludeResourcePrefixes),
		kueueworkload.WithResourceTransformations(cfg.Transformations), kueueworkload.WithPreprocessedDRAResources(claims.requests, claims.replaced))
	out := make([]PodSet, 0, len(in))
	total := resources.MapRequests{}
	for i := range in {
		ps := &in[i]
		perPod := info.TotalRequests[i].Requests
		for name, v := range perPod.Iter() {
			// Negative or overflowing amounts would let a huge workload slip under
			// a policy's limit, so they are errors rather than wrapped numbers.
			if v < 0 {
				return nil, nil, fmt.Errorf("pod set %q: negative request for %s", ps.Name, name)
			}
			scaled, ok := mulNonNegative(v, int64(ps.Count))
			if !ok || total[name] > math.MaxInt64-scaled {
				return nil, nil, fmt.Errorf("pod set %q: total request for %s overflows", ps.Name, name)
			}
			total[name] += scaled
		}
		out = append(out, PodSet{Name: string(ps.Name), Count: ps.Count, MinCount: ps.MinCount, Requests: perPod.ToResourceList(nil)})
	}
	return out, total.ToResourceList(nil), nil
}

// mulNonNegative multiplies two non-negative numbers, reporting overflow.
func mulNonNegative(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}

// decodeInto converts the parts of an unstructured object a pod-set builder reads
// (identity, labels, annotations and spec; never status, which a client may set
// to anything on CREATE and Kueue does not read from a request) into a typed
// object with fromUnstructured, matching field names case-sensitively like the
// API server, so a wrongly typed field is an error, not a panic.
func decodeInto(obj *unstructured.Unstructured, into any) error {
	return decodeWith(converter{}, obj, into)
}

// decodeWith is decodeInto by a given conversion.
func decodeWith(c converter, obj *unstructured.Unstructured, into any) error {
	meta := map[string]any{}
	if m, ok := obj.Object["metadata"]; ok && m != nil {
		mm, ok := m.(map[string]any)
		if !ok {
			return errors.New("metadata is not an object")
		}
		for _, k := range []string{"name", "generateName", "namespace", "labels", "annotations"} {
			if v, ok := mm[k]; ok {
				meta[k] = v
			}
		}
	}
	slim := map[string]any{"metadata": meta}
	if spec, ok := obj.Object["spec"]; ok {
		slim["spec"] = spec
	}
	convert := c.convert
	if viaAPIMachinery {
		convert = runtime.DefaultUnstructuredConverter.FromUnstructured
	}
	if err := convert(slim, into); err != nil {
		return fmt.Errorf("decoding object: %w", err)
	}
	return nil
}

// viaAPIMachinery makes decodeInto use apimachinery's converter, which
// converts every field: only the specs that prove fromUnstructured equal to
// it turn it on, with slimContainers off.
var viaAPIMachinery = false

// objectName renders "namespace/name" for messages (just "name" when cluster
// scoped or not yet namespaced, generateName followed by "*" when unnamed).
func objectName(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	switch {
	case name != "":
	case obj.GetGenerateName() != "":
		name = obj.GetGenerateName() + "*"
	default:
		name = "(unnamed)"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + name
	}
	return name
}

// admissionUnit is what Kueue admits at once for the object, and what it
// reserves for one unit at full size and at its minimum.
func admissionUnit(obj *unstructured.Unstructured, podSets []PodSet, total corev1.ResourceList) (
	unit AdmissionUnit, full, min corev1.ResourceList, fullPods, minPods int64) {
	gk := obj.GroupVersionKind().GroupKind()
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		one := corev1.ResourceList{}
		if len(podSets) > 0 {
			one = podSets[0].Requests
		}
		return UnitPod, one, one, 1, 1
	case schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}:
		// One group: the leader (when there is a leader template) and the
		// workers of size.
		size, found, _ := unstructured.NestedInt64(obj.Object, "spec", "leaderWorkerTemplate", "size")
		if !found || size < 1 {
			size = 1
		}
		perGroup := []int64{size}
		if _, leader, _ := unstructured.NestedMap(obj.Object, "spec", "leaderWorkerTemplate", "leaderTemplate"); leader {
			perGroup = []int64{1, size - 1}
		}
		group := corev1.ResourceList{}
		var pods int64
		for i, ps := range podSets {
			if i < len(perGroup) {
				addScaled(group, ps.Requests, perGroup[i])
				pods += perGroup[i]
			}
		}
		return UnitGroup, group, group, pods, pods
	}
	min = corev1.ResourceList{}
	partial := false
	for _, ps := range podSets {
		n := int64(ps.Count)
		fullPods += n
		if ps.MinCount != nil && *ps.MinCount < ps.Count {
			n, partial = int64(*ps.MinCount), true
		}
		minPods += n
		addScaled(min, ps.Requests, n)
	}
	if !partial {
		min = total
	}
	return UnitWorkload, total, min, fullPods, minPods
}

// addScaled adds n × per to into. The amounts were checked for overflow when
// the totals were computed, and n never exceeds a pod set's count.
func addScaled(into, per corev1.ResourceList, n int64) {
	for name, q := range per {
		v := q.DeepCopy()
		v.Mul(n)
		if cur, ok := into[name]; ok {
			v.Add(cur)
		}
		into[name] = v
	}
}

// Priority sources, as Kueue names them on a Workload (spec.priorityClassRef).
const (
	PrioritySourceWorkload = "kueue.x-k8s.io/workloadpriorityclass"
	PrioritySourcePod      = "scheduling.k8s.io/priorityclass"
)

// Priority is the class a workload's priority comes from, and its source.
type Priority struct {
	Class, Source string
}

// priorityOf is jobframework.ExtractPriority without the lookup of the
// class's value: the WorkloadPriorityClass label; else, for a kind whose
// adapter chooses (priorityClassFuncs), its choice; else the first pod set's
// priorityClassName.
func priorityOf(obj *unstructured.Unstructured, in *integrations.Integration, podSets []kueue.PodSet) (Priority, error) {
	if c := PriorityClass(obj, in); c != "" {
		return Priority{Class: c, Source: PrioritySourceWorkload}, nil
	}
	if custom, ok := priorityClassFuncs[in.GVK.GroupKind()]; ok {
		c, err := custom(obj)
		if err != nil || c == "" {
			return Priority{}, err
		}
		return Priority{Class: c, Source: PrioritySourcePod}, nil
	}
	for _, ps := range podSets {
		if c := ps.Template.Spec.PriorityClassName; c != "" {
			return Priority{Class: c, Source: PrioritySourcePod}, nil
		}
	}
	return Priority{}, nil
}
