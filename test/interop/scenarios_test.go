package interop

import (
	"fmt"
	"math/rand/v2"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// The simulation scenarios' shared objects: three flavors (one tainted) and
// two WorkloadPriorityClasses.
const (
	simFlavorX, simFlavorY, simFlavorZ = "sim-x", "sim-y", "sim-z"
	simLow, simHigh                    = "sim-low", "sim-high"
	simPoolLabel                       = "sim-pool"
	simTaintKey                        = "sim-spot"
)

// scenario is one generated cluster corner: a cohort with a target
// ClusterQueue and a sibling, the jobs already there (admitted or pending),
// and the new workload simulate is asked about.
type scenario struct {
	n                 int
	namespace         string
	cohort            *kueue.Cohort
	target, sibling   *kueue.ClusterQueue
	existing          []*unstructured.Unstructured
	newWorkload       *unstructured.Unstructured
	targetQ, siblingQ string
}

// generateScenarios builds n scenarios from a fixed seed: the same set on
// every run.
func generateScenarios(n int) []*scenario {
	rng := rand.New(rand.NewPCG(28, 2026))
	out := make([]*scenario, n)
	for i := range out {
		out[i] = generateScenario(rng, i)
	}
	return out
}

func generateScenario(rng *rand.Rand, i int) *scenario {
	s := &scenario{n: i, namespace: fmt.Sprintf("sim-%d", i), targetQ: "target", siblingQ: "sibling"}
	cohort := fmt.Sprintf("sim-%d", i)
	q := func(n int) resource.Quantity { return *resource.NewQuantity(int64(n), resource.DecimalSI) }
	limit := func(max int) *resource.Quantity {
		if rng.IntN(2) == 0 {
			return nil
		}
		v := q(rng.IntN(max + 1))
		return &v
	}
	// The target's flavors: one or two of x, y, z in a random order.
	flavors := []string{simFlavorX, simFlavorY, simFlavorZ}
	rng.Shuffle(len(flavors), func(a, b int) { flavors[a], flavors[b] = flavors[b], flavors[a] })
	flavors = flavors[:1+rng.IntN(2)]
	var fqs []kueue.FlavorQuotas
	for _, f := range flavors {
		fqs = append(fqs, kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(f), Resources: []kueue.ResourceQuota{
			{Name: corev1.ResourceCPU, NominalQuota: q(2 + rng.IntN(7)), BorrowingLimit: limit(4)}}})
	}
	strategy := []kueue.QueueingStrategy{kueue.BestEffortFIFO, kueue.StrictFIFO}[rng.IntN(2)]
	preemption := &kueue.ClusterQueuePreemption{
		WithinClusterQueue:  []kueue.PreemptionPolicy{kueue.PreemptionPolicyNever, kueue.PreemptionPolicyLowerPriority}[rng.IntN(2)],
		ReclaimWithinCohort: []kueue.PreemptionPolicy{kueue.PreemptionPolicyNever, kueue.PreemptionPolicyAny}[rng.IntN(2)],
	}
	s.cohort = &kueue.Cohort{ObjectMeta: metav1.ObjectMeta{Name: cohort}}
	s.target = &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: cohort + "-target"}, Spec: kueue.ClusterQueueSpec{
		CohortName: kueue.CohortReference(cohort), NamespaceSelector: &metav1.LabelSelector{}, QueueingStrategy: strategy,
		Preemption: preemption, ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU}, Flavors: fqs}}}}
	siblingQuota := rng.IntN(7)
	s.sibling = &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: cohort + "-sibling"}, Spec: kueue.ClusterQueueSpec{
		CohortName: kueue.CohortReference(cohort), NamespaceSelector: &metav1.LabelSelector{},
		ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU}, Flavors: []kueue.FlavorQuotas{{
			Name: simFlavorX, Resources: []kueue.ResourceQuota{{Name: corev1.ResourceCPU, NominalQuota: q(siblingQuota), LendingLimit: limit(min(3, siblingQuota))}}}}}}}}

	// Jobs already there, all of the low class (no preemption among them).
	// StrictFIFO targets get none that would wait: a workload behind a
	// blocked head is never tried, so Kueue would say nothing to compare
	// (the unit tests cover the blocking head).
	// Under StrictFIFO they must all fit the first flavor they may use (not
	// the tainted one), or the next would sit behind a blocked head.
	room := int64(0)
	for _, fq := range fqs {
		if fq.Name != simFlavorY {
			room = fq.Resources[0].NominalQuota.Value()
			break
		}
	}
	for j := range rng.IntN(3) {
		cpu := 1 + rng.IntN(4)
		if strategy == kueue.StrictFIFO {
			if int64(cpu) > room {
				break
			}
			room -= int64(cpu)
		}
		s.existing = append(s.existing, simJob(s.namespace, fmt.Sprintf("old-t%d", j), s.targetQ, simLow, 1, cpu, "", false))
	}
	for j := range rng.IntN(3) {
		s.existing = append(s.existing, simJob(s.namespace, fmt.Sprintf("old-s%d", j), s.siblingQ, simLow, 1, 1+rng.IntN(4), "", false))
	}
	if strategy == kueue.BestEffortFIFO && rng.IntN(3) == 0 {
		s.existing = append(s.existing, simJob(s.namespace, "old-big", s.targetQ, simLow, 1, 30, "", false))
	}

	// The new workload: a Job or a JobSet, of 1–3 pods of 1–4 cpu, maybe
	// bound to a pool (and tolerating the tainted flavor), low or high.
	class := []string{simLow, simHigh}[rng.IntN(2)]
	pool := []string{"", "", "", "x", "y"}[rng.IntN(5)]
	tolerates := rng.IntN(3) > 0
	pods, cpu := 1+rng.IntN(3), 1+rng.IntN(4)
	if rng.IntN(4) == 0 {
		s.newWorkload = simJobSet(s.namespace, "new", s.targetQ, class, pods, cpu, pool, tolerates)
	} else {
		s.newWorkload = simJob(s.namespace, "new", s.targetQ, class, pods, cpu, pool, tolerates)
	}
	return s
}

// simPort makes every generated pod's shape distinct: Kueue 0.19 moves the
// Workloads of one shape (SchedulingEquivalenceHashing, on by default) to
// its inadmissible set together, without a word on the others.
var simPort int32 = 10000

// simPodSpec is a pod of cpu cores, maybe bound to a pool, maybe tolerating
// the tainted flavor.
func simPodSpec(cpu int, pool string, tolerates bool) corev1.PodTemplateSpec {
	res := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpu), resource.DecimalSI)}
	simPort++
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: res},
			Ports: []corev1.ContainerPort{{ContainerPort: simPort}}}}}
	if pool != "" {
		spec.NodeSelector = map[string]string{simPoolLabel: pool}
	}
	if tolerates {
		spec.Tolerations = []corev1.Toleration{{Key: simTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	return corev1.PodTemplateSpec{Spec: spec}
}

func simJob(ns, name, queue, class string, pods, cpu int, pool string, tolerates bool) *unstructured.Unstructured {
	labels := map[string]string{integrations.QueueNameLabel: queue}
	if class != "" {
		labels["kueue.x-k8s.io/priority-class"] = class
	}
	j := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: batchv1.JobSpec{Parallelism: new(int32(pods)), Completions: new(int32(pods)),
			Template: simPodSpec(cpu, pool, tolerates)}}
	return toUnstructured(j)
}

// simJobSet is a JobSet of two replicated jobs ("lead" of one pod, "workers"
// of pods-1 or 1), each pod of cpu cores.
func simJobSet(ns, name, queue, class string, pods, cpu int, pool string, tolerates bool) *unstructured.Unstructured {
	tmpl := simPodSpec(cpu, pool, tolerates)
	rj := func(rjName string, n int) map[string]any {
		t, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
		return map[string]any{"name": rjName, "replicas": int64(1), "template": map[string]any{"spec": map[string]any{
			"parallelism": int64(n), "completions": int64(n), "template": t}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"namespace": ns, "name": name,
			"labels": map[string]any{integrations.QueueNameLabel: queue, "kueue.x-k8s.io/priority-class": class}},
		"spec": map[string]any{"replicatedJobs": []any{rj("lead", 1), rj("workers", max(pods-1, 1))}}}}
}

func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}
