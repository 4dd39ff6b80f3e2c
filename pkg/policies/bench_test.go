package policies_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/gomega"
)

// benchValidate measures the policy step as the validating path runs it: input
// built from the request and the view, every policy evaluated, results applied.
func benchValidate(b *testing.B, e *policies.Engine, req *admission.Request, view cluster.View) {
	b.Helper()
	p := admission.NewPipeline(nil, nil, admission.Steps{Validating: []admission.ValidationStep{policies.NewStep(e)}})
	ctx := b.Context()
	if _, err := p.Validate(ctx, req, view); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d, err := p.Validate(ctx, req, view)
		if err != nil || len(d.Violations) > 1 {
			b.Fatalf("unexpected result: %v %v", err, d.Violations)
		}
	}
}

// benchCluster is gpuCluster as the server's informers give it: every object
// with a uid and a resourceVersion, so that the input's cluster parts are
// built once and reused, as they are in the server (a snapshot of objects
// without a version is rebuilt on every request).
func benchCluster(usedGPUs string) *cluster.Snapshot {
	objs := gpuClusterObjects(usedGPUs)
	for _, o := range objs {
		o.SetUID(types.UID(o.GetNamespace() + "/" + o.GetName()))
		o.SetResourceVersion("1")
	}
	return snapshot(objs...)
}

// noDecisionCache makes a benchmark measure evaluations: a repeated input would
// otherwise be answered from the cache after the first.
func noDecisionCache(o *policies.Options) { o.DecisionCacheSize = -1 }

func BenchmarkEvaluateShippedJob(b *testing.B) {
	RegisterTestingT(b)
	e := loadedEngine(shippedDir, noDecisionCache)
	benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), benchCluster("2"))
}

func BenchmarkEvaluateShippedJobSet(b *testing.B) {
	RegisterTestingT(b)
	e := loadedEngine(shippedDir, noDecisionCache)
	js := fixtures.JobSet("ml", "bench").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").
		Requests("cpu", "2").Requests("memory", "8Gi").Requests(gpu, "2").Obj()
	jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	driver := fixtures.JobSet("ml", "x").Requests("cpu", "1").Requests("memory", "1Gi").Obj()
	extra, _, _ := unstructured.NestedSlice(driver.Object, "spec", "replicatedJobs")
	extra[0].(map[string]any)["name"] = "driver"
	extra[0].(map[string]any)["replicas"] = int64(1)
	Expect(unstructured.SetNestedSlice(js.Object, append(jobs, extra[0]), "spec", "replicatedJobs")).To(Succeed())
	benchValidate(b, e, createRequest(js), benchCluster("0"))
}

// BenchmarkEvaluateShippedDistinctJobs evaluates the shipped set on Jobs that
// differ as make bench's distinct-workload streams' do (their cpu request, a
// label of their own) and request no GPU, as most do: a stream's
// evaluations, which no decision can be reused for.
func BenchmarkEvaluateShippedDistinctJobs(b *testing.B) {
	RegisterTestingT(b)
	view := benchCluster("0")
	inputs := make([]ast.Value, 256)
	for i := range inputs {
		j := fixtures.Job("ml", "j").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "3600").
			Label("app.kubernetes.io/instance", "shape-"+strconv.Itoa(i)).
			Requests("cpu", strconv.Itoa(1000+i)+"m").Requests("memory", "1Gi").Parallelism(3).Obj()
		var err error
		inputs[i], err = policies.BuildInput(b.Context(), createRequest(j), admission.Target{}, view)
		Expect(err).NotTo(HaveOccurred())
	}
	e := loadedEngine(shippedDir, noDecisionCache)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if res := e.Evaluate(b.Context(), inputs[i%len(inputs)]); len(res.Failures) > 0 {
			b.Fatal(res.Failures)
		}
		i++
	}
}

func BenchmarkEvaluateNPolicies(b *testing.B) {
	RegisterTestingT(b)
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			RegisterTestingT(b)
			dir := b.TempDir()
			files := map[string]string{}
			for i := range n {
				files[fmt.Sprintf("p%04d.rego", i)] = fmt.Sprintf(
					"package bench.p%d\n\ndeny contains \"queue %d is closed\" if input.workload.queueName == \"q-%d\"\n", i, i, i)
			}
			writeFiles(dir, files)
			e := loadedEngine(dir, noDecisionCache)
			Expect(e.Policies()).To(HaveLen(n))
			benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), benchCluster("0"))
		})
	}
}

// BenchmarkEvaluateNPoliciesMatching is BenchmarkEvaluateNPolicies with a
// handful of policies matching the request (a Job) and the rest declaring, in
// custom.match, other kinds: the index must keep the cost of those flat.
func BenchmarkEvaluateNPoliciesMatching(b *testing.B) {
	RegisterTestingT(b)
	const matching = 3
	for _, n := range []int{matching, 10, 100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			RegisterTestingT(b)
			dir := b.TempDir()
			files := map[string]string{}
			for i := range n {
				kind := "kinds:\n- apiGroups: [jobset.x-k8s.io]\n  kinds: [JobSet]"
				if i < matching {
					kind = "kinds:\n- apiGroups: [batch]\n  kinds: [Job]"
				}
				files[fmt.Sprintf("p%04d.rego", i)] = strings.Replace(matchPolicy(fmt.Sprintf("bench.p%d", i), kind),
					`deny contains "applies" if true`, fmt.Sprintf(`deny contains "queue %d is closed" if input.workload.queueName == "q-%d"`, i, i), 1)
			}
			writeFiles(dir, files)
			e := loadedEngine(dir, noDecisionCache)
			Expect(e.Policies()).To(HaveLen(n))
			benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), benchCluster("0"))
		})
	}
}

// BenchmarkShippedPolicy evaluates each shipped policy alone (with lib.rego and
// data.yaml) on a queued GPU Job CREATE: which policy costs what.
func BenchmarkShippedPolicy(b *testing.B) {
	RegisterTestingT(b)
	forEachShippedSet(b, false, func(b *testing.B, e *policies.Engine) {
		benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), benchCluster("2"))
	})
}

// BenchmarkShippedPolicyTraining is BenchmarkShippedPolicy on a real training
// job's JobSet (about 20 KB: four replicated jobs, twelve containers with
// their environment, probes and mounts), and "all" every shipped policy at
// once: what a policy that judges every container costs on a large workload.
func BenchmarkShippedPolicyTraining(b *testing.B) {
	RegisterTestingT(b)
	training := fixtures.TrainingJobSet("ml", "train").Queue("lq").
		Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Held().Obj()
	forEachShippedSet(b, true, func(b *testing.B, e *policies.Engine) {
		benchValidate(b, e, createRequest(training), benchCluster("0"))
	})
}

// BenchmarkShippedPolicyEvaluation is BenchmarkShippedPolicy without the
// request: the input is built once, so that each figure is the policy's
// evaluation alone; "all" is every shipped policy in one query.
func BenchmarkShippedPolicyEvaluation(b *testing.B) {
	RegisterTestingT(b)
	input, err := policies.BuildInput(b.Context(), createRequest(gpuJob("bench", 4, "2")), admission.Target{}, benchCluster("2"))
	Expect(err).NotTo(HaveOccurred())
	forEachShippedSet(b, true, func(b *testing.B, e *policies.Engine) {
		b.ReportAllocs()
		for b.Loop() {
			if res := e.Evaluate(b.Context(), input); len(res.Failures) > 0 {
				b.Fatal(res.Failures)
			}
		}
	})
}

// forEachShippedSet runs bench on an engine serving each shipped policy alone
// (with lib.rego and data.yaml) and, withAll, on one serving all of them.
func forEachShippedSet(b *testing.B, withAll bool, bench func(b *testing.B, e *policies.Engine)) {
	each, all := shippedPolicySets()
	if withAll {
		each = append(each, all)
	}
	for _, set := range each {
		b.Run(set.name, func(b *testing.B) {
			RegisterTestingT(b)
			dir := b.TempDir()
			writeFiles(dir, set.files)
			bench(b, loadedEngine(dir, noDecisionCache))
		})
	}
}

type policyFiles struct {
	name  string
	files map[string]string
}

// shippedPolicySets are each shipped policy with lib.rego and data.yaml, and
// all of them together (BenchmarkEvaluateShippedJob's set).
func shippedPolicySets() (each []policyFiles, all policyFiles) {
	entries, err := os.ReadDir(shippedDir)
	Expect(err).NotTo(HaveOccurred())
	read := func(name string) string {
		content, err := os.ReadFile(filepath.Join(shippedDir, name))
		Expect(err).NotTo(HaveOccurred())
		return string(content)
	}
	shared := map[string]string{"lib.rego": read("lib.rego"), "data.yaml": read("data.yaml")}
	all = policyFiles{name: "all", files: maps.Clone(shared)}
	for _, ent := range entries {
		name := ent.Name()
		if !strings.HasSuffix(name, ".rego") || strings.HasSuffix(name, "_test.rego") || name == "lib.rego" {
			continue
		}
		files := maps.Clone(shared)
		files[name], all.files[name] = read(name), read(name)
		each = append(each, policyFiles{name: strings.TrimSuffix(name, ".rego"), files: files})
	}
	return each, all
}

// BenchmarkEvaluateShippedJobCached is BenchmarkEvaluateShippedJob with the
// decision cache on: what a repeated shape costs (the input built and compared).
func BenchmarkEvaluateShippedJobCached(b *testing.B) {
	RegisterTestingT(b)
	e := loadedEngine(shippedDir)
	benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), benchCluster("2"))
}
