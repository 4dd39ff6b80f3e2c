package policies_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The step decides a request with less than a full evaluation: only the input
// the policies read, a decision reused for an input seen before, no
// evaluation of a policy whose custom.match.updates the update does not make,
// and kueue-guard's own cache of rule results in place of OPA's.
// Each must leave every decision as a full, uncached evaluation of every
// policy on the whole input gives it, above all where a shortcut would let a
// problem through: an update that introduces one without growing, a second
// object that differs only where no policy reads but carries one.
var _ = Describe("Decisions with projection, reuse and update triggers", func() {
	It("equal a full evaluation of every policy on the whole input, for every request of the corpus, twice", func(ctx SpecContext) {
		fast := policies.NewStep(loadedEngine(shippedDir))
		full := loadedEngine(shippedDir, noDecisionCache)
		policies.UseOPARuleCache(full)
		view := gpuCluster("2")
		reqs := equivalenceCorpus()
		Expect(len(reqs)).To(BeNumerically(">", 40))
		reported := 0
		for round := range 2 { // the second round is answered from the cache
			for i, req := range reqs {
				want := reference(ctx, full, req, view)
				got := policyFindings(validateWith(fast, req, view))
				Expect(got).To(Equal(want), "round %d, request %d (%s %s)", round, i, req.Operation, req.Name)
				if len(want) > 0 {
					reported++
				}
			}
		}
		// The corpus must hold problems for the shortcuts to hide.
		Expect(reported).To(BeNumerically(">", len(reqs)/2))
	})

	// Evaluations share their rule caches through a pool: a cache must come
	// back empty, whether its evaluation ended or was cut off inside a frame,
	// and never serve two evaluations at once.
	It("equal it under concurrent requests while other evaluations are cut off mid-way", func(ctx SpecContext) {
		full := loadedEngine(shippedDir, noDecisionCache)
		policies.UseOPARuleCache(full)
		fast := policies.NewStep(loadedEngine(shippedDir, noDecisionCache))
		cut := policies.NewStep(loadedEngine(shippedDir, noDecisionCache, func(o *policies.Options) { o.Timeout = 50 * time.Microsecond }))
		view := gpuCluster("2")
		reqs := equivalenceCorpus()
		want := make([][]string, len(reqs))
		for i, req := range reqs {
			want[i] = reference(ctx, full, req, view)
		}
		var wg sync.WaitGroup
		var cutOff atomic.Int64
		for w := range 4 {
			wg.Go(func() {
				defer GinkgoRecover()
				for round := range 3 {
					for k := range reqs {
						i := (k + 7*w) % len(reqs)
						Expect(policyFindings(validateWith(fast, reqs[i], view))).To(Equal(want[i]), "worker %d, round %d, request %d", w, round, i)
					}
				}
			})
		}
		for range 2 {
			wg.Go(func() {
				defer GinkgoRecover()
				for range 3 {
					for _, req := range reqs {
						if slices.ContainsFunc(validateWith(cut, req, view).Violations, func(v admission.Violation) bool {
							return strings.Contains(v.Message, "evaluation did not finish within")
						}) {
							cutOff.Add(1)
						}
					}
				}
			})
		}
		wg.Wait()
		// The cut-off evaluations must have happened for the spec to mean anything.
		Expect(cutOff.Load()).To(BeNumerically(">", 0))
	})
})

var _ = Describe("The decision cache", func() {
	hits := func(e *policies.Engine) float64 { return metricValue(e.Metrics().Decisions.WithLabelValues("hit")) }

	It("answers again when what the policies read of the cluster changes, and reuses the answer when it comes back", func(ctx SpecContext) {
		e := loadedEngine(shippedDir)
		full := loadedEngine(shippedDir, noDecisionCache)
		step := policies.NewStep(e)
		req := createRequest(gpuJob("j", 4, "1"))
		roomy, busy := gpuCluster("0"), gpuCluster("6")
		first := policyFindings(validateWith(step, req, roomy))
		second := policyFindings(validateWith(step, req, busy))
		Expect(first).To(Equal(reference(ctx, full, req, roomy)))
		Expect(second).To(Equal(reference(ctx, full, req, busy)))
		Expect(second).NotTo(Equal(first), "the ClusterQueue's usage is read: its change is a new decision")
		Expect(hits(e)).To(BeZero())
		Expect(policyFindings(validateWith(step, req, roomy))).To(Equal(first))
		Expect(hits(e)).To(Equal(1.0))
	})

	It("reuses the answer for a workload of the same shape with labels of its own, and not for one whose label a policy reads", func(ctx SpecContext) {
		e := loadedEngine(shippedDir)
		full := loadedEngine(shippedDir, noDecisionCache)
		step := policies.NewStep(e)
		view := gpuCluster("0")
		trial := func(name string, labels map[string]string) *admission.Request {
			j := gpuJob(name, 2, "1")
			for k, v := range labels {
				j = fixtures.Object{Unstructured: j}.Label(k, v).Obj()
			}
			return createRequest(j)
		}
		// A sweep's trials: one shape, each with its own label.
		first := trial("trial-1", map[string]string{"sweep.example/trial": "1"})
		want := policyFindings(validateWith(step, first, view))
		Expect(want).To(Equal(reference(ctx, full, first, view)))
		second := trial("trial-2", map[string]string{"sweep.example/trial": "2", "team": "nlp"})
		Expect(policyFindings(validateWith(step, second, view))).To(Equal(want))
		Expect(hits(e)).To(Equal(1.0))
		// Without the max-exec-time label the answer differs: a new decision.
		bare := gpuJob("trial-3", 2, "1")
		unstructured.RemoveNestedField(bare.Object, "metadata", "labels", "kueue.x-k8s.io/max-exec-time-seconds")
		third := createRequest(bare)
		got := policyFindings(validateWith(step, third, view))
		Expect(got).To(Equal(reference(ctx, full, third, view)))
		Expect(got).NotTo(Equal(want), "max-exec-time-required warns")
		Expect(hits(e)).To(Equal(1.0))
	})

	DescribeTable("reuses the answer when only what no policy reads of the cluster changes: the queue's workload counts",
		func(ctx SpecContext, versioned bool) {
			e := loadedEngine(shippedDir)
			full := loadedEngine(shippedDir, noDecisionCache)
			step := policies.NewStep(e)
			req := createRequest(gpuJob("j", 4, "1"))
			version := func(v string) string {
				if versioned {
					return v
				}
				return ""
			}
			first := policyFindings(validateWith(step, req, clusterWithCounts(0, version("1"))))
			Expect(first).NotTo(BeEmpty(), "the Job needs more GPUs than are free: a warning")
			busier := clusterWithCounts(7, version("2"))
			Expect(policyFindings(validateWith(step, req, busier))).To(Equal(first))
			Expect(hits(e)).To(Equal(1.0))
			Expect(reference(ctx, full, req, busier)).To(Equal(first))
		},
		Entry("objects from the informers", true),
		Entry("objects without a version", false),
	)

	It("gives a new answer when a policy reads the queue's counts by a key it computes", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"p.rego": policy("busy", "deny", `key := concat("", ["pending", "Workloads"])
deny contains "the queue is busy" if input.clusterQueue[key] > 5`)})
		e := loadedEngine(dir)
		step := policies.NewStep(e)
		req := createRequest(gpuJob("j", 4, "1"))
		for i, pending := range []int32{0, 7, 0} {
			view := clusterWithCounts(pending, fmt.Sprint(pending))
			got := policyFindings(validateWith(step, req, view))
			Expect(got).To(Equal(reference(ctx, loadedEngine(dir, noDecisionCache), req, view)), "request %d", i)
			Expect(got).To(HaveLen(int(pending/7)), "request %d", i)
		}
		Expect(hits(e)).To(Equal(1.0), "the third request is the first's")
	})

	// The cluster's parts are cached per object version for the step, which
	// outlives a policy reload: a set that reads more of an unchanged
	// ClusterQueue must not get the part cut for the set before it.
	It("gives a new set the parts of an unchanged queue it reads, not those cut for the set before", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"p.rego": policy("named", "deny",
			`deny contains "no queue name" if not input.clusterQueue.name`)})
		e := loadedEngine(dir)
		step := policies.NewStep(e)
		req := createRequest(gpuJob("j", 4, "1"))
		view := clusterWithCounts(7, "1")
		Expect(policyFindings(validateWith(step, req, view))).To(BeEmpty())

		writeFiles(dir, map[string]string{"p.rego": policy("busy", "deny",
			`deny contains "the queue is busy" if input.clusterQueue.pendingWorkloads > 5`)})
		Expect(e.Load()).To(Succeed())
		got := policyFindings(validateWith(step, req, view))
		Expect(got).To(Equal([]string{"busy: the queue is busy"}))
		Expect(got).To(Equal(reference(ctx, loadedEngine(dir, noDecisionCache), req, view)))
	})

	It("is not used by a set that reads the time (a built-in the admin must allow)", func() {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"p.rego": policy("clock", "deny",
			`deny contains "from the future" if time.now_ns() < input.workload.podSets[0].count`)})
		e := loadedEngine(dir, func(o *policies.Options) { o.AllowBuiltins = []string{"time.now_ns"} })
		step := policies.NewStep(e)
		req := createRequest(gpuJob("j", 4, "1"))
		for range 3 {
			Expect(policyFindings(validateWith(step, req, gpuCluster("0")))).To(BeEmpty())
		}
		Expect(hits(e)).To(BeZero())
		Expect(metricValue(e.Metrics().Decisions.WithLabelValues("miss"))).To(BeZero())
	})
})

// reference is what every policy reports on the whole input, uncached, as the
// step would report it: "policy: message" for a request the built-in rules
// let through (the step is only run on queued workloads).
func reference(ctx context.Context, e *policies.Engine, req *admission.Request, view cluster.View) []string {
	in, err := policies.BuildInput(ctx, req, admission.Target{}, view)
	Expect(err).NotTo(HaveOccurred())
	res := e.Evaluate(ctx, in)
	Expect(res.Failures).To(BeEmpty())
	out := []string{}
	for _, f := range res.Findings {
		out = append(out, fmt.Sprintf("%s: %s", f.Policy.ID, f.Message))
	}
	slices.Sort(out)
	return out
}

// clusterWithCounts is the GPU cluster with ClusterQueue cq's pending (and
// half as many admitted) workloads. Objects with a version are what the
// server's informers hold, and their input parts are cached; without one
// (version ""), a review's.
func clusterWithCounts(pending int32, version string) *cluster.Snapshot {
	objs := gpuClusterObjects("6")
	for _, o := range objs {
		if cq, ok := o.(*kueue.ClusterQueue); ok && cq.Name == "cq" {
			cq.Status.PendingWorkloads, cq.Status.AdmittedWorkloads = pending, pending/2
		}
		if version != "" {
			o.SetUID(types.UID(o.GetName()))
			o.SetResourceVersion(version)
		}
	}
	return snapshot(objs...)
}

func policyFindings(d *admission.Decision) []string {
	out := []string{}
	for _, v := range d.Violations {
		out = append(out, fmt.Sprintf("%s: %s", v.Rule, v.Message))
	}
	slices.Sort(out)
	return out
}

// equivalenceCorpus is CREATEs and UPDATEs of Jobs and JobSets by alice, each
// workload in two copies that differ only in name and uid, so that the second
// of each pair is answered from the cache.
func equivalenceCorpus() []*admission.Request {
	var out []*admission.Request
	for _, name := range []string{"a", "b"} {
		for _, c := range equivalenceCases(name) {
			if c.old == nil {
				out = append(out, createRequest(c.obj))
				continue
			}
			out = append(out, updateRequest(c.old, c.obj))
		}
	}
	return out
}

type equivalenceCase struct{ old, obj *unstructured.Unstructured }

// equivalenceCases vary what each shipped policy reads, alone and on updates
// that do and do not change it.
func equivalenceCases(name string) []equivalenceCase {
	job := func(parallelism int64, gpus string) *unstructured.Unstructured {
		j := gpuJob("job-"+name, parallelism, gpus)
		j.SetUID(uid(name))
		return j
	}
	edit := func(u *unstructured.Unstructured, f func(o fixtures.Object)) *unstructured.Unstructured {
		c := u.DeepCopy()
		f(fixtures.Object{Unstructured: c})
		return c
	}
	annotate := func(o fixtures.Object) { o.SetAnnotations(map[string]string{"touched": "yes"}) }
	grace := func(secs int64) func(o fixtures.Object) {
		return func(o fixtures.Object) { o.Set(secs, "spec", "template", "spec", "terminationGracePeriodSeconds") }
	}
	claim := func(o fixtures.Object) {
		o.Set([]any{map[string]any{"name": "gpu", "resourceClaimName": "shared"}}, "spec", "template", "spec", "resourceClaims")
	}
	noMemory := func(o fixtures.Object) { o.Requests("memory", "0") }
	queue := func(q string) func(o fixtures.Object) { return func(o fixtures.Object) { o.Queue(q) } }
	priority := func(o fixtures.Object) { o.Label("kueue.x-k8s.io/priority-class", "critical") }
	unbounded := func(o fixtures.Object) { o.Set("TerminatingOrFailed", "spec", "podReplacementPolicy") }
	// What the policies read inside a pod spec's lists, element by element: an
	// init container, a sidecar, a second container without requests, a limit
	// standing in for a request, and an environment no policy reads.
	containers := []string{"spec", "template", "spec", "containers"}
	initContainer := func(c map[string]any) func(o fixtures.Object) {
		return func(o fixtures.Object) { o.Set([]any{c}, "spec", "template", "spec", "initContainers") }
	}
	sidecar := initContainer(map[string]any{"name": "proxy", "image": "envoy", "restartPolicy": "Always"})
	limitsOnly := initContainer(map[string]any{"name": "init", "resources": map[string]any{
		"limits": map[string]any{"cpu": "1", "memory": "1Gi"}}})
	secondContainer := func(o fixtures.Object) {
		o.Containers(func(l []any) []any {
			return append(l, map[string]any{"name": "logger", "resources": map[string]any{
				"requests": map[string]any{"memory": "64Mi"}}})
		}, containers...)
	}
	env := func(value string) func(o fixtures.Object) {
		return func(o fixtures.Object) {
			o.FirstContainer(func(c map[string]any) {
				c["env"] = []any{map[string]any{"name": "SEED", "value": value}}
			}, containers...)
		}
	}
	failurePolicy := func(o fixtures.Object) {
		o.Set(map[string]any{"rules": []any{map[string]any{"action": "FailJob",
			"onExitCodes": map[string]any{"operator": "In", "values": []any{int64(42)}}}}}, "spec", "podFailurePolicy")
		unstructured.RemoveNestedField(o.Object, "spec", "podReplacementPolicy")
	}
	small, big := job(2, "1"), job(16, "2") // big asks 32 GPUs: over the namespace's 8
	jobSet := fixtures.JobSet("ml", "js-"+name).Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").
		Requests("cpu", "2").Requests("memory", "8Gi").Requests(gpu, "1").Held().Obj()
	jobSet.SetUID(uid(name + "-js"))
	cases := []equivalenceCase{
		{obj: small}, {obj: big}, {obj: jobSet},
		{obj: edit(small, grace(3600))}, {obj: edit(small, claim)}, {obj: edit(small, noMemory)},
		{obj: edit(small, priority)}, {obj: edit(small, queue("elsewhere"))},
		{obj: edit(small, func(o fixtures.Object) { o.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": "lq"}) })},
		{obj: edit(small, sidecar)}, {obj: edit(small, limitsOnly)}, {obj: edit(small, secondContainer)},
		{obj: edit(small, env("1"))}, {obj: edit(small, env("2"))}, {obj: edit(edit(small, unbounded), failurePolicy)},
	}
	// What the API server rewrites on every update, alone (the old object's
	// summary is then reused), and with an annotation Kueue reads (partial
	// admission's minimum; not reused, see equalOutsideSpec's table).
	rewritten := func(o fixtures.Object) {
		o.SetResourceVersion("2")
		o.SetGeneration(2)
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	}
	minParallelism := func(o fixtures.Object) {
		rewritten(o)
		o.SetAnnotations(map[string]string{"kueue.x-k8s.io/job-min-parallelism": "1"})
	}
	changes := []func(o fixtures.Object){annotate, grace(3600), grace(60), claim, noMemory, priority,
		queue("elsewhere"), unbounded, func(o fixtures.Object) { o.Parallelism(32) }, sidecar, secondContainer, env("3"),
		rewritten, minParallelism}
	for _, base := range []*unstructured.Unstructured{small, big, edit(small, grace(3600)), edit(small, unbounded)} {
		for _, change := range changes {
			cases = append(cases, equivalenceCase{old: base, obj: edit(base, change)})
		}
	}
	// A JobSet's own metadata: its pod templates are elsewhere.
	for _, change := range []func(o fixtures.Object){annotate, priority, queue("elsewhere"), noMemory, rewritten} {
		cases = append(cases, equivalenceCase{old: jobSet, obj: edit(jobSet, change)})
	}
	return cases
}

func uid(s string) types.UID { return types.UID("uid-" + s) }

// updateRequest is an UPDATE of old to obj by alice.
func updateRequest(old, obj *unstructured.Unstructured) *admission.Request {
	req := createRequest(obj)
	req.Operation = admissionv1.Update
	req.OldObject = old
	return req
}
