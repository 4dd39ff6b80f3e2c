package tenant

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The holds of release_test.go must not stop the controllers: the parts of a
// workload Kueue manages are left to it, and Kueue releases what it admits.
var _ = Describe("the controllers' parts of a queued workload, with every hold in place", func() {
	It("a StatefulSet's pods are one pod group: gated by Kueue, admitted and ungated together", func() {
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("sts")},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), PodManagementPolicy: appsv1.ParallelPodManagement,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "group"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "group"}},
					Spec: corev1.PodSpec{Containers: podSpec(0).Containers}}}}
		Expect(alice.Create(ctx, sts)).To(Succeed())
		get(sts)
		Expect(sts.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue), "defaulted")
		Expect(sts.Spec.Template.Annotations).To(HaveKeyWithValue("kueue.x-k8s.io/pod-suspending-parent", "statefulset"))
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(team), client.MatchingLabels{"app": "group"})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(p.Spec.SchedulingGates).To(BeEmpty(), "Kueue admitted the group and ungated %s", p.Name)
			}
		}, 2*time.Minute).Should(Succeed())
	})

	It("a JobSet's Jobs, made by the JobSet controller, are left to the JobSet Kueue manages", func() {
		js := fixtures.JobSet(team, name("js")).Queue(heldLQ).Obj()
		Expect(alice.Create(ctx, js)).To(Succeed())
		jobset := jobSetController(team)
		// The JobSet controller makes its Jobs once Kueue resumes the JobSet;
		// here it makes one as it would, with the JobSet as controller.
		child := job(1, 0)
		child.Labels = nil
		child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet",
			Name: js.GetName(), UID: js.GetUID(), Controller: new(true)}}
		Expect(jobset.Create(ctx, child)).To(Succeed())
		// The create's answer is the object as admission left it (Kueue's
		// reconciler may suspend it later, while the JobSet waits).
		Expect(child.Labels).NotTo(HaveKey(integrations.QueueNameLabel), "part of the JobSet: not queued on its own")
		Expect(child.Annotations).NotTo(HaveKey("kueue-guard.io/defaulted-by"))
		Expect(ptr.Deref(child.Spec.Suspend, false)).To(BeFalse(), "no webhook holds a part of a workload at its creation")

		// A queue label the tenant wrote into the JobSet's template reaches the
		// server; Kueue's walk still finds the queued JobSet above it.
		labelled := jobSetJob(js, 1)
		createAsController(jobset, labelled)
		Expect(labelled.Annotations).NotTo(HaveKey("kueue-guard.io/defaulted-by"))
		Expect(ptr.Deref(labelled.Spec.Suspend, false)).To(BeFalse(), "part of the JobSet: Kueue does not hold it either")
	})

	It("a Job the JobSet controller makes with a queue label under a JobSet Kueue does not manage is judged on its own", func() {
		const open = "team-open" // a LocalQueue, no default queue: an unqueued JobSet is not a Kueue workload
		tenantNamespace(open, map[string]string{"kueue-guard.io/max-gpus": gpuLimit}, nil)
		Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: open, Name: queue},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "cq"}})).To(Succeed())
		jobset := jobSetController(open)
		js := fixtures.JobSet(open, name("js")).Obj()
		Expect(alice.Create(ctx, js)).To(Succeed())
		Eventually(func() error {
			return admin.Get(ctx, client.ObjectKey{Namespace: open, Name: queue}, &kueue.LocalQueue{})
		}).Should(Succeed())

		// Her JobSet's template names a queue for its Jobs: Kueue queues each
		// Job by its own label, so each must meet the policies as a workload.
		deniedAsController(jobset, jobSetJob(js, 8), "kueue_guard.max_gpus_per_workload")
		small := jobSetJob(js, 1)
		createAsController(jobset, small)
		Expect(ptr.Deref(small.Spec.Suspend, false)).To(BeTrue(), "queued on its own: Kueue holds it until it admits it")
	})
})

// jobSetController acts as the JobSet operator's service account, with edit
// rights in namespace: the operator does not run in the test control plane.
func jobSetController(namespace string) client.Client {
	GinkgoHelper()
	Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name("jobset-edit")},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "jobset-system", Name: "jobset-controller-manager"}}})).To(Succeed())
	return impersonatingServiceAccount("jobset-system", "jobset-controller-manager")
}

// jobSetJob is a Job as the JobSet controller makes it for js, carrying the
// queue label a tenant can write into the JobSet's Job template.
func jobSetJob(js client.Object, gpus int64) *batchv1.Job {
	j := job(1, gpus)
	j.Namespace = js.GetNamespace()
	j.Labels[integrations.QueueNameLabel] = queue
	j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet",
		Name: js.GetName(), UID: js.GetUID(), Controller: new(true)}}
	return j
}
