package workload_test

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// runtimes holds (Cluster)TrainingRuntimes by kind, namespace and name.
type runtimes map[[3]string]*unstructured.Unstructured

func (r runtimes) TrainingRuntime(kind, namespace, name string) (*unstructured.Unstructured, bool) {
	u, ok := r[[3]string{kind, namespace, name}]
	return u, ok
}

func runtimeFrom(doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	return u
}

// A torch runtime of 2 nodes with a dataset initializer.
const torchRuntime = `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
          spec:
            template:
              spec:
                containers:
                - {name: dataset-initializer, image: init, resources: {requests: {cpu: "1", memory: 2Gi}}}
      - name: node
        dependsOn: [{name: dataset-initializer, status: Complete}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: torch, resources: {requests: {cpu: "2"}, limits: {nvidia.com/gpu: "1"}}}
`

// nsRuntime is the same torch runtime as a namespaced TrainingRuntime.
var nsRuntime = strings.Replace(strings.Replace(torchRuntime, "kind: ClusterTrainingRuntime", "kind: TrainingRuntime", 1),
	"metadata: {name: torch}", "metadata: {name: torch, namespace: team-a}", 1)

var _ = Describe("TrainJob pod sets from its runtime", func() {
	rts := runtimes{
		{"ClusterTrainingRuntime", "", "torch"}: runtimeFrom(torchRuntime),
		{"TrainingRuntime", "team-a", "torch"}:  runtimeFrom(nsRuntime),
	}
	summarize := func(spec map[string]any) *workload.Summary {
		sum, err := workload.SummarizeWith(context.Background(), object("trainer.kubeflow.org/v1alpha1", "TrainJob", spec), workload.Options{Runtimes: rts})
		Expect(err).NotTo(HaveOccurred())
		return sum
	}

	It("takes the runtime's node count, containers and initializers (the CRD defaults runtimeRef to a ClusterTrainingRuntime)", func() {
		sum := summarize(map[string]any{"runtimeRef": map[string]any{"name": "torch"}})
		Expect(sum.PodSets).To(equalPodSets([]workload.PodSet{
			ps("dataset-initializer", 1, rl{"cpu": "1", "memory": "2Gi"}),
			ps("node", 2, rl{"cpu": "2", "nvidia.com/gpu": "1"}),
		}))
		Expect(sum.TotalRequests.Cpu().String()).To(Equal("5"))
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").String()).To(Equal("2"))
	})

	It("applies the TrainJob's numNodes and resourcesPerNode over the runtime's", func() {
		sum := summarize(map[string]any{
			"runtimeRef": map[string]any{"name": "torch", "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
			"trainer": map[string]any{"numNodes": int64(4),
				"resourcesPerNode": map[string]any{"limits": rl{"nvidia.com/gpu": "8"}.anyMap()}},
		})
		Expect(sum.PodSets[len(sum.PodSets)-1:]).To(equalPodSets([]workload.PodSet{ps("node", 4, rl{"nvidia.com/gpu": "8"})}))
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").String()).To(Equal("32"))
	})

	It("reads a namespaced TrainingRuntime from the TrainJob's own namespace only", func() {
		ref := map[string]any{"name": "torch", "kind": "TrainingRuntime"}
		sum := summarize(map[string]any{"runtimeRef": ref, "trainer": map[string]any{"numNodes": int64(3)}})
		Expect(sum.PodSets[1:]).To(equalPodSets([]workload.PodSet{ps("node", 3, rl{"cpu": "2", "nvidia.com/gpu": "1"})}))

		other := object("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{"runtimeRef": ref})
		other.SetNamespace("team-b")
		sum, err := workload.SummarizeWith(context.Background(), other, workload.Options{Runtimes: rts})
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.PodSets).To(equalPodSets([]workload.PodSet{ps("node", 1, nil)}), "team-a's runtime is not team-b's")
	})

	It("falls back to numNodes × resourcesPerNode when the runtime is not known (Kueue then makes no Workload)", func() {
		sum := summarize(map[string]any{"runtimeRef": map[string]any{"name": "missing"},
			"trainer": map[string]any{"numNodes": int64(3), "resourcesPerNode": map[string]any{"requests": rl{"cpu": "2"}.anyMap()}}})
		Expect(sum.PodSets).To(equalPodSets([]workload.PodSet{ps("node", 3, rl{"cpu": "2"})}))
	})

	It("refuses a runtimeRef of a kind Kueue cannot build", func() {
		_, err := workload.SummarizeWith(context.Background(), object("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{
			"runtimeRef": map[string]any{"name": "x", "apiGroup": "example.com", "kind": "Other"}}), workload.Options{Runtimes: rts})
		Expect(err).To(MatchError(ContainSubstring("unsupported runtime Other.example.com")))
	})
})
