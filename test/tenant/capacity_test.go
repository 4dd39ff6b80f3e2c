package tenant

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Capacity that hides from the count: what a tenant asks for must be what the
// shipped policies judge, however it is asked.
var _ = Describe("capacity asked for another way", func() {
	It("a sidecar or init container without requests is refused, as is a request of zero", func() {
		withSidecar := job(1, 0)
		always := corev1.ContainerRestartPolicyAlways
		withSidecar.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox", RestartPolicy: &always}}
		denied(alice.Create(ctx, withSidecar), "kueue_guard.require_resource_requests")

		withInit := job(1, 0)
		withInit.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
		denied(alice.Create(ctx, withInit), "kueue_guard.require_resource_requests")

		zero := job(1, 0)
		zero.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0")
		zero.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("0")
		denied(alice.Create(ctx, zero), "kueue_guard.require_resource_requests")

		fine := job(1, 0)
		fine.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox", RestartPolicy: &always,
			Resources: fine.Spec.Template.Spec.Containers[0].Resources}}
		Expect(alice.Create(ctx, fine)).To(Succeed())
	})

	It("a reserved priority class is refused whether named by Kueue's label or by the pods' priorityClassName", func() {
		// The shipped data reserves "critical" for ml-platform-admins.
		byPods := job(1, 0)
		byPods.Spec.Template.Spec.PriorityClassName = "critical"
		denied(alice.Create(ctx, byPods), "kueue_guard.priority_class_allowed")

		byLabel := job(1, 0)
		byLabel.Labels["kueue.x-k8s.io/priority-class"] = "critical"
		denied(alice.Create(ctx, byLabel), "kueue_guard.priority_class_allowed")

		// An MPIJob's scheduling policy names the class Kueue's adapter
		// picks first, over its templates'.
		Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "mpijobs-edit"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"kubeflow.org"}, Resources: []string{"mpijobs"},
				Verbs: []string{"create"}}}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "alice-mpijobs"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "mpijobs-edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}}})).To(Succeed())
		mpi := fixtures.MPIJob(team, name("mpi")).Requests("cpu", "100m").Requests("memory", "64Mi").
			Set("critical", "spec", "runPolicy", "schedulingPolicy", "priorityClass").Obj()
		// The API server's RBAC cache may take a moment to see the new binding.
		var err error
		Eventually(func() bool {
			err = alice.Create(ctx, mpi)
			return !apierrors.IsForbidden(err)
		}).Should(BeTrue(), "alice may never create MPIJobs: %v", err)
		denied(err, "kueue_guard.priority_class_allowed")
	})

	It("a ResourceClaim by name is refused: Kueue charges only claim templates; a template is admitted", func() {
		byName := job(1, 0)
		byName.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: new("eight-gpus")}}
		err := alice.Create(ctx, byName)
		denied(err, "kueue_guard.dra_claims_counted")
		Expect(err.Error()).To(ContainSubstring("use resourceClaimTemplateName"))

		fromTemplate := job(1, 0)
		fromTemplate.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus",
			ResourceClaimTemplateName: new("eight-gpus")}}
		Expect(alice.Create(ctx, fromTemplate)).To(Succeed())
	})

	It("a MIG slice is a GPU to the cap: 5 MIG instances are refused under a cap of 4", func() {
		mig := corev1.ResourceName("nvidia.com/mig-1g.5gb")
		over := job(1, 0)
		res := over.Spec.Template.Spec.Containers[0].Resources
		res.Requests[mig], res.Limits[mig] = resource.MustParse("5"), resource.MustParse("5")
		err := alice.Create(ctx, over)
		denied(err, "kueue_guard.max_gpus_per_workload")
		Expect(err.Error()).To(ContainSubstring("requests 5 GPUs (nvidia.com/mig-1g.5gb)"))
	})

	It("a queued workload whose pods could outlive their charge is refused with the fix; the fixed one is admitted", func() {
		const rule = "kueue_guard.pod_termination_bounded"
		// The API server's default replaces a pod as soon as it starts terminating.
		byDefault := job(1, 0)
		byDefault.Spec.PodReplacementPolicy = nil
		err := alice.Create(ctx, byDefault)
		denied(err, rule)
		Expect(err.Error()).To(ContainSubstring("podReplacementPolicy is TerminatingOrFailed"))
		Expect(err.Error()).To(ContainSubstring("set podReplacementPolicy: Failed"))

		week := job(1, 0)
		week.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(7 * 24 * 3600))
		err = alice.Create(ctx, week)
		denied(err, rule)
		Expect(err.Error()).To(ContainSubstring("set it to 300 or less"))

		// A JobSet's replicated job is a Job spec the tenant writes too.
		js := fixtures.JobSet(team, name("js")).Obj()
		jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		unstructured.RemoveNestedField(jobs[0].(map[string]any), "template", "spec", "podReplacementPolicy")
		Expect(unstructured.SetNestedSlice(js.Object, jobs, "spec", "replicatedJobs")).To(Succeed())
		denied(alice.Create(ctx, js), rule)

		// Fixed: Failed, or a podFailurePolicy (the API server then defaults
		// Failed), and the bound itself.
		Expect(alice.Create(ctx, job(1, 0))).To(Succeed())
		withFailurePolicy := job(1, 0)
		withFailurePolicy.Spec.PodReplacementPolicy = nil
		withFailurePolicy.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
		}}}
		withFailurePolicy.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(300))
		Expect(alice.Create(ctx, withFailurePolicy)).To(Succeed())
		Expect(withFailurePolicy.Spec.PodReplacementPolicy).To(HaveValue(Equal(batchv1.Failed)), "as the API server stored it")
	})

	It("an update that lengthens a Deployment's grace period is refused, though it does not grow the workload", func() {
		d := deployment("lingering", 1)
		Expect(alice.Create(ctx, d)).To(Succeed())
		Eventually(func() error {
			get(d)
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(24 * 3600))
			return alice.Update(ctx, d)
		}).Should(MatchError(ContainSubstring("[kueue_guard.pod_termination_bounded]")))
	})
})
