package tenant

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A DELETE's grace period overrides the pod's, and Kueue 0.19 frees a Job's
// quota once no pod is active: the chart's CEL twin bounds it where the API
// server acts on it.
var _ = Describe("a pod's deletion", func() {
	const week = int64(7 * 24 * 3600)

	// bind places a pod on a node, as the scheduler would (none runs here):
	// the API server deletes an unscheduled pod at once, whatever grace period
	// is asked, and only a scheduled one's deletion is graceful.
	bind := func(pod *corev1.Pod) {
		GinkgoHelper()
		Expect(admin.SubResource("binding").Create(ctx, pod, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-a"}})).To(Succeed())
	}

	// runningPod is a pod of a Job alice queued, admitted by Kueue and bound.
	runningPod := func() *corev1.Pod {
		GinkgoHelper()
		j := job(1, 0)
		Expect(alice.Create(ctx, j)).To(Succeed())
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(team), client.MatchingLabels{"job-name": j.Name})).To(Succeed())
			g.Expect(pods.Items).NotTo(BeEmpty())
			*pod = pods.Items[0]
		}, time.Minute).Should(Succeed(), "Kueue admits the Job and the Job controller makes its pod")
		bind(pod)
		return pod
	}

	It("cannot ask for a grace period past the bound, by DELETE or by eviction", func() {
		pod := runningPod()
		// The API server loads a new admission policy within moments: a
		// dry run (admission runs, nothing is deleted) waits for it.
		Eventually(func() error { return alice.Delete(ctx, pod, client.GracePeriodSeconds(week), client.DryRunAll) }).
			Should(MatchError(ContainSubstring("[" + admission.RulePodDeletionGrace + "]")))
		err := alice.Delete(ctx, pod, client.GracePeriodSeconds(week))
		Expect(err).To(MatchError(And(ContainSubstring("["+admission.RulePodDeletionGrace+"]"),
			ContainSubstring("a grace period of 604800s"), ContainSubstring("--grace-period=300 or less"))))

		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: new(week)}}
		Expect(alice.SubResource("eviction").Create(ctx, pod, eviction)).
			To(MatchError(ContainSubstring("[" + admission.RulePodDeletionGrace + "]")))

		stored := &corev1.Pod{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(pod), stored)).To(Succeed())
		Expect(stored.DeletionTimestamp).To(BeNil(), "the pod is not terminating")

		Expect(alice.Delete(ctx, pod, client.GracePeriodSeconds(300))).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(pod), stored)).To(Succeed())
		Expect(stored.DeletionGracePeriodSeconds).To(HaveValue(Equal(int64(300))), "terminating within the bound")
		Expect(alice.Delete(ctx, runningPod())).To(Succeed(), "a DELETE naming no grace period")
	})

	It("never holds a pod in a namespace kueue-guard exempts", func() {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name("system-pod")},
			Spec: podSpec(0)}
		pod.Spec.NodeName = "node-a"
		Expect(admin.Create(ctx, pod)).To(Succeed())
		Expect(admin.Delete(ctx, pod, client.GracePeriodSeconds(week))).To(Succeed())
	})
})
