package tenant

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

	It("a JobSet's Jobs and pods, made by the real JobSet operator once Kueue admits the JobSet, run untouched", func() {
		// A queue label the tenant writes into the Jobs' template reaches each Job;
		// Kueue's walk still finds the queued JobSet above it, and so does ours.
		js := fixtures.JobSet(team, name("js")).Obj()
		replicated, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		Expect(unstructured.SetNestedField(replicated[0].(map[string]any), queue, "template", "metadata", "labels", integrations.QueueNameLabel)).To(Succeed())
		Expect(unstructured.SetNestedSlice(js.Object, replicated, "spec", "replicatedJobs")).To(Succeed())
		Expect(alice.Create(ctx, js)).To(Succeed())
		Expect(js.GetLabels()).To(HaveKeyWithValue(integrations.QueueNameLabel, queue), "defaulted")
		Expect(js.Object["spec"]).To(HaveKeyWithValue("suspend", true), "stored held")
		Expect(js.Object["spec"]).To(HaveKey("successPolicy"), "JobSet's own webhook defaulted it")

		inJobSet := client.MatchingLabels{"jobset.sigs.k8s.io/jobset-name": js.GetName()}
		Eventually(func(g Gomega) {
			jobs := &batchv1.JobList{}
			g.Expect(admin.List(ctx, jobs, client.InNamespace(team), inJobSet)).To(Succeed())
			g.Expect(jobs.Items).To(HaveLen(2), "the operator made a Job per replica")
			for _, j := range jobs.Items {
				g.Expect(metav1.GetControllerOf(&j).UID).To(Equal(js.GetUID()))
				g.Expect(j.Annotations).NotTo(HaveKey("kueue-guard.io/defaulted-by"))
				g.Expect(ptr.Deref(j.Spec.Suspend, true)).To(BeFalse(), "Kueue admitted the JobSet: its Jobs run")
			}
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(team), inJobSet)).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2), "kube-controller-manager made each Job's pod")
			for _, p := range pods.Items {
				g.Expect(p.Spec.SchedulingGates).To(BeEmpty(), "%s is part of the admitted JobSet, not a workload of its own", p.Name)
				g.Expect(p.Labels).NotTo(HaveKey("kueue.x-k8s.io/managed"))
			}
		}, 2*time.Minute).Should(Succeed())
	})

	It("a RayJob with its own cluster: Kueue admits it, and the real KubeRay operator's RayCluster, pods and submitter Job are left to it", func() {
		rj := fixtures.RayJob(team, name("ray")).Obj()
		Expect(alice.Create(ctx, rj)).To(Succeed())
		Expect(rj.GetLabels()).To(HaveKeyWithValue(integrations.QueueNameLabel, queue), "defaulted")
		Expect(rj.Object["spec"]).To(HaveKeyWithValue("suspend", true), "stored held")

		Eventually(func(g Gomega) {
			clusters := &unstructured.UnstructuredList{}
			clusters.SetAPIVersion("ray.io/v1")
			clusters.SetKind("RayClusterList")
			g.Expect(admin.List(ctx, clusters, client.InNamespace(team))).To(Succeed())
			var cluster *unstructured.Unstructured
			for i, c := range clusters.Items {
				if owner := metav1.GetControllerOf(&c); owner != nil && owner.UID == rj.GetUID() {
					cluster = &clusters.Items[i]
				}
			}
			g.Expect(cluster).NotTo(BeNil(), "KubeRay made the RayJob's cluster once Kueue resumed it")
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(team), client.MatchingLabels{"ray.io/cluster": cluster.GetName()})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2), "its head and its worker")
			for _, p := range pods.Items {
				g.Expect(p.Spec.SchedulingGates).To(BeEmpty(), "%s is part of the admitted RayJob", p.Name)
				g.Expect(p.Labels).NotTo(HaveKey(integrations.QueueNameLabel))
			}
			// No kubelet runs here: the pods are reported running and ready as
			// one would, so that KubeRay goes on to submit the job.
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodRunning {
					p.Status.Phase = corev1.PodRunning
					p.Status.PodIP = "10.0.0.1"
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Ready: true,
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
					g.Expect(admin.Status().Update(ctx, &p)).To(Succeed())
				}
			}
			jobs := &batchv1.JobList{}
			g.Expect(admin.List(ctx, jobs, client.InNamespace(team))).To(Succeed())
			var submitter *batchv1.Job
			for i, j := range jobs.Items {
				if owner := metav1.GetControllerOf(&j); owner != nil && owner.UID == rj.GetUID() {
					submitter = &jobs.Items[i]
				}
			}
			g.Expect(submitter).NotTo(BeNil(), "KubeRay submitted the job once its cluster was ready")
			g.Expect(ptr.Deref(submitter.Spec.Suspend, false)).To(BeFalse(), "part of the admitted RayJob: nothing holds it")
			g.Expect(submitter.Labels).NotTo(HaveKey(integrations.QueueNameLabel))
		}, 2*time.Minute).Should(Succeed())
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
