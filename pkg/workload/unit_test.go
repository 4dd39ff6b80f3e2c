package workload_test

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("what Kueue admits at once", func() {
	unit := func(obj *unstructured.Unstructured) *workload.Summary {
		s, err := workload.Summarize(context.Background(), obj)
		Expect(err).NotTo(HaveOccurred())
		return s
	}
	// gpus are the GPUs of one unit at full size and at the minimum.
	gpus := func(s *workload.Summary) []int64 {
		u, m := s.UnitRequests["nvidia.com/gpu"], s.MinUnitRequests["nvidia.com/gpu"]
		return []int64{u.Value(), m.Value()}
	}

	It("is the whole Job, at full size and at partial admission's minimum", func() {
		s := unit(object("batch/v1", "Job", map[string]any{"parallelism": int64(4), "completions": int64(4),
			"template": gpuLimit("2")}))
		Expect(s.AdmissionUnit).To(Equal(workload.UnitWorkload))
		Expect(gpus(s)).To(Equal([]int64{8, 8}))

		partial := object("batch/v1", "Job", map[string]any{"parallelism": int64(4), "completions": int64(4), "template": gpuLimit("2")})
		partial.SetAnnotations(map[string]string{"kueue.x-k8s.io/job-min-parallelism": "1"})
		s = unit(partial)
		Expect(*s.PodSets[0].MinCount).To(BeEquivalentTo(1))
		Expect(gpus(s)).To(Equal([]int64{8, 2}))
	})

	It("is one pod of a Deployment, which Kueue admits pod by pod", func() {
		s := unit(object("apps/v1", "Deployment", map[string]any{"replicas": int64(5),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}, "template": gpuLimit("1")}))
		Expect(s.AdmissionUnit).To(Equal(workload.UnitPod))
		Expect(s.TotalRequests["nvidia.com/gpu"]).To(HaveField("String()", "5"))
		Expect(gpus(s)).To(Equal([]int64{1, 1}))
	})

	It("is one group of a LeaderWorkerSet: its leader and its workers", func() {
		s := unit(object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{"replicas": int64(3),
			"leaderWorkerTemplate": map[string]any{"size": int64(4), "leaderTemplate": gpuLimit("1"), "workerTemplate": gpuLimit("2")}}))
		Expect(s.AdmissionUnit).To(Equal(workload.UnitGroup))
		Expect(gpus(s)).To(Equal([]int64{1 + 3*2, 1 + 3*2}))
	})
})
