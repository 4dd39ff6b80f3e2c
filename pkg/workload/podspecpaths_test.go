package workload_test

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
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

	// No kind's schema keeps a template or object metadata in a container, so
	// Kueue reads nothing there: what a tenant hides in one is neither a pod
	// spec to judge nor a label or marker, and the walks skip containers' maps
	// (environment, probes, mounts: most of a workload's).
	It("never looks inside a container, for templates, nested labels or markers", func() {
		job := fixtures.Job("a", "j").Obj()
		hidden := map[string]any{
			"metadata": map[string]any{
				"labels":      map[string]any{integrations.QueueNameLabel: "other"},
				"annotations": map[string]any{workload.ReservedMarkers[0]: "x"},
			},
			"spec": map[string]any{"containers": []any{}},
		}
		for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
			c := map[string]any{"name": list, "image": "busybox", "template": hidden, "env": []any{hidden}}
			Expect(unstructured.SetNestedSlice(job.Object, []any{c}, "spec", "template", "spec", list)).To(Succeed())
		}
		in, _ := integrations.Lookup(job.GroupVersionKind().GroupKind())
		Expect(workload.PodSpecPaths(job)).To(Equal([][]any{{"spec", "template", "spec"}}))
		Expect(workload.NestedLabelSites(job, in, integrations.QueueNameLabel)).To(BeEmpty())
		Expect(workload.KueueMarkers(job)).To(BeEmpty())
	})
})
