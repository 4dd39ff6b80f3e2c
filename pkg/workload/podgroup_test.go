package workload_test

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("a pod group is one Workload", func() {
	groupPod := func(count string) *unstructured.Unstructured {
		pod := object("v1", "Pod", podSpec(ctr("main", rl{"cpu": "1"}, rl{"nvidia.com/gpu": "2"})))
		pod.SetLabels(map[string]string{"kueue.x-k8s.io/pod-group-name": "train"})
		if count != "" {
			pod.SetAnnotations(map[string]string{"kueue.x-k8s.io/pod-group-total-count": count})
		}
		return pod
	}

	It("counts pod-group-total-count pods of the pod's role, as Kueue's Workload for a group of alike pods", func() {
		sum, err := workload.Summarize(context.Background(), groupPod("4"))
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.PodSets).To(HaveLen(1))
		Expect(sum.PodSets[0].Name).NotTo(Equal("main"), "Kueue names a group's pod set by the role hash")
		Expect(sum.PodSets[0].Count).To(BeEquivalentTo(4))
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").String()).To(Equal("8"))
		Expect(sum.AdmissionUnit).To(Equal(workload.UnitWorkload))

		again, err := workload.Summarize(context.Background(), groupPod("4"))
		Expect(err).NotTo(HaveOccurred())
		Expect(again.PodSets[0].Name).To(Equal(sum.PodSets[0].Name), "alike pods share a role")
	})

	It("counts a group named by annotation, as Kueue 0.19 reads it first (WorkloadIdentifierAnnotations)", func() {
		pod := groupPod("4")
		pod.SetLabels(nil)
		pod.SetAnnotations(map[string]string{"kueue.x-k8s.io/pod-group-total-count": "4", "kueue.x-k8s.io/pod-group-name": "train"})
		sum, err := workload.Summarize(context.Background(), pod)
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.PodSets[0].Count).To(BeEquivalentTo(4))
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").String()).To(Equal("8"), "not one pod's 2 GPUs")
	})

	It("counts a pod outside any group as one pod", func() {
		pod := groupPod("4")
		pod.SetLabels(nil)
		sum, err := workload.Summarize(context.Background(), pod)
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.PodSets).To(equalPodSets([]workload.PodSet{ps("main", 1, rl{"cpu": "1", "nvidia.com/gpu": "2"})}))
	})

	DescribeTable("refuses a group count Kueue refuses, naming the annotation",
		func(count, want string) {
			_, err := workload.Summarize(context.Background(), groupPod(count))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("missing", "", "has no kueue.x-k8s.io/pod-group-total-count annotation"),
		Entry("zero", "0", `kueue.x-k8s.io/pod-group-total-count="0"`),
		Entry("negative", "-3", `kueue.x-k8s.io/pod-group-total-count="-3"`),
		Entry("not a number", "many", `"many"`),
		Entry("beyond a pod set's count", "4294967296", `"4294967296"`),
	)
})
