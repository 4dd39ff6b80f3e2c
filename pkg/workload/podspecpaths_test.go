package workload_test

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("PodSpecPaths", func() {
	It("finds a Pod's spec and every template of a JobSet, in order", func() {
		Expect(workload.PodSpecPaths(fixtures.Pod("a", "p").Obj())).To(Equal([][]any{{"spec"}}))
		js := fixtures.JobSet("a", "js").Obj()
		jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		jobs = append(jobs, jobs[0])
		Expect(unstructured.SetNestedSlice(js.Object, jobs, "spec", "replicatedJobs")).To(Succeed())
		Expect(workload.PodSpecPaths(js)).To(Equal([][]any{
			{"spec", "replicatedJobs", 0, "template", "spec", "template", "spec"},
			{"spec", "replicatedJobs", 1, "template", "spec", "template", "spec"},
		}))
	})

	It("finds templates wherever a kind keeps them, never in status, within the depth bound", func() {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"mpiReplicaSpecs": map[string]any{
				"Worker":   map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{}}}},
				"Launcher": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{}}}},
			}},
			"status": map[string]any{"containers": []any{}},
		}}
		Expect(workload.PodSpecPaths(obj)).To(Equal([][]any{
			{"spec", "mpiReplicaSpecs", "Launcher", "template", "spec"},
			{"spec", "mpiReplicaSpecs", "Worker", "template", "spec"},
		}))
		deep := map[string]any{"containers": []any{}}
		for range 100 {
			deep = map[string]any{"x": deep}
		}
		Expect(workload.PodSpecPaths(&unstructured.Unstructured{Object: map[string]any{"spec": deep}})).To(BeEmpty())
	})
})
