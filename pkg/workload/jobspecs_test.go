package workload_test

import (
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("JobSpecPaths", func() {
	// appWrapper embeds objects as an AppWrapper's components.
	appWrapper := func(objs ...*unstructured.Unstructured) *unstructured.Unstructured {
		components := make([]any, len(objs))
		for i, o := range objs {
			components[i] = map[string]any{"template": o.Object}
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
			"spec": map[string]any{"components": components}}}
	}
	DescribeTable("lists the Job specs the object writes, and only those",
		func(obj *unstructured.Unstructured, want [][]any) {
			Expect(cmp.Diff(want, workload.JobSpecPaths(obj))).To(BeEmpty())
		},
		Entry("a Job", fixtures.Job("a", "j").Obj(), [][]any{{"spec"}}),
		Entry("a CronJob's job template", fixtures.CronJob("a", "c").Obj(), [][]any{{"spec", "jobTemplate", "spec"}}),
		Entry("each replicated job of a JobSet", twoReplicatedJobs(), [][]any{
			{"spec", "replicatedJobs", 0, "template", "spec"},
			{"spec", "replicatedJobs", 1, "template", "spec"},
		}),
		Entry("the Jobs and JobSets an AppWrapper embeds, not its Pods",
			appWrapper(fixtures.Pod("a", "p").Obj(), fixtures.Job("a", "j").Obj(), fixtures.JobSet("a", "js").Obj()),
			[][]any{
				{"spec", "components", 1, "template", "spec"},
				{"spec", "components", 2, "template", "spec", "replicatedJobs", 0, "template", "spec"},
			}),
		Entry("none for a Deployment, though its template sits where a Job's does",
			fixtures.Deployment("a", "d").Obj(), [][]any(nil)),
		Entry("none for an MPIJob: its operator writes the launcher Job", fixtures.MPIJob("a", "m").Obj(), [][]any(nil)),
		Entry("none for a Job of another group", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Job", "spec": map[string]any{}}}, [][]any(nil)),
	)

	It("stops at AppWrappers nested deeper than its bound", func() {
		obj := fixtures.Job("a", "j").Obj()
		for range 10 {
			obj = appWrapper(obj)
		}
		Expect(workload.JobSpecPaths(obj)).To(BeEmpty())
	})
})

func twoReplicatedJobs() *unstructured.Unstructured {
	js := fixtures.JobSet("a", "js").Obj()
	jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	_ = unstructured.SetNestedSlice(js.Object, append(jobs, jobs[0]), "spec", "replicatedJobs")
	return js
}
