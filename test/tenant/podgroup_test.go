package tenant

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A pod group is one Workload to Kueue: every pod of it is charged as the
// group. Kueue 0.19 names the group by annotation before the label
// (WorkloadIdentifierAnnotations, on by default), so a tenant who names it
// only by annotation must not be judged as one pod.
var _ = Describe("a pod group", func() {
	groupPod := func(mark func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("grouped"),
			Annotations: map[string]string{"kueue.x-k8s.io/pod-group-total-count": "4"}}, Spec: podSpec(2)}
		mark(p)
		return p
	}

	DescribeTable("of 4 pods of 2 GPUs is judged as its 8 GPUs under team-a's cap of "+gpuLimit,
		func(mark func(*corev1.Pod)) {
			denied(alice.Create(ctx, groupPod(mark)), "kueue_guard.max_gpus_per_workload")
		},
		Entry("named by the label kueue.x-k8s.io/pod-group-name", func(p *corev1.Pod) {
			p.Labels = map[string]string{"kueue.x-k8s.io/pod-group-name": "train"}
		}),
		Entry("named only by the annotation kueue.x-k8s.io/pod-group-name, as Kueue 0.19 reads it first", func(p *corev1.Pod) {
			p.Annotations["kueue.x-k8s.io/pod-group-name"] = "train-annotated"
		}),
	)

	It("is not a group without a name: the same pod alone is its own 2 GPUs, admitted and gated by Kueue", func() {
		// (Kueue's webhook refuses a group count without a group name.)
		p := groupPod(func(p *corev1.Pod) { p.Annotations = nil })
		Expect(alice.Create(ctx, p)).To(Succeed())
		get(p)
		Expect(p.Spec.SchedulingGates).To(ContainElement(corev1.PodSchedulingGate{Name: "kueue.x-k8s.io/admission"}))
	})
})
