package policies_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

func BenchmarkEvaluateShippedJob(b *testing.B) {
	RegisterTestingT(b)
	e := loadedEngine(shippedDir)
	benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), gpuCluster("2"))
}

func BenchmarkEvaluateShippedJobSet(b *testing.B) {
	RegisterTestingT(b)
	e := loadedEngine(shippedDir)
	js := fixtures.JobSet("ml", "bench").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").
		Requests("cpu", "2").Requests("memory", "8Gi").Requests(gpu, "2").Obj()
	jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	driver := fixtures.JobSet("ml", "x").Requests("cpu", "1").Requests("memory", "1Gi").Obj()
	extra, _, _ := unstructured.NestedSlice(driver.Object, "spec", "replicatedJobs")
	extra[0].(map[string]any)["name"] = "driver"
	extra[0].(map[string]any)["replicas"] = int64(1)
	Expect(unstructured.SetNestedSlice(js.Object, append(jobs, extra[0]), "spec", "replicatedJobs")).To(Succeed())
	benchValidate(b, e, createRequest(js), gpuCluster("0"))
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
			e := loadedEngine(dir)
			Expect(e.Policies()).To(HaveLen(n))
			benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), gpuCluster("0"))
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
			e := loadedEngine(dir)
			Expect(e.Policies()).To(HaveLen(n))
			benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), gpuCluster("0"))
		})
	}
}
