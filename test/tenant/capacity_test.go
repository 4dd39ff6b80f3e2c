package tenant

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

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

	It("a request in nanocores is judged by its value, never failing the policy", func() {
		// The API server rounds a Pod's or Job's cpu up to millicores, but
		// keeps a custom resource's quantities as written: OPA's units.parse
		// knows no n, and a policy that failed on it would be skipped under
		// onError: allow.
		js := fixtures.JobSet(team, name("js")).Obj()
		jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		containers, _, _ := unstructured.NestedSlice(jobs[0].(map[string]any), "template", "spec", "template", "spec", "containers")
		Expect(unstructured.SetNestedField(containers[0].(map[string]any), "250000001n", "resources", "requests", "cpu")).To(Succeed())
		Expect(unstructured.SetNestedSlice(jobs[0].(map[string]any), containers, "template", "spec", "template", "spec", "containers")).To(Succeed())
		Expect(unstructured.SetNestedSlice(js.Object, jobs, "spec", "replicatedJobs")).To(Succeed())
		Expect(alice.Create(ctx, js)).To(Succeed())
		Expect(js.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicatedJobs", ContainElement(
			HaveKeyWithValue("template", HaveKeyWithValue("spec", HaveKeyWithValue("template", HaveKeyWithValue("spec",
				HaveKeyWithValue("containers", ContainElement(HaveKeyWithValue("resources",
					HaveKeyWithValue("requests", HaveKeyWithValue("cpu", "250000001n")))))))))))),
			"as the API server stored it")
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

	It("GPUs claimed through DRA count: 8 are refused under a cap of 4, 3 admitted with Kueue charging 3; "+
		"an unmapped device class and a claim by name are refused", func() {
		byName := job(1, 0)
		byName.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: new("eight-gpus")}}
		err := alice.Create(ctx, byName)
		denied(err, "kueue_guard.dra_claims_counted")
		Expect(err.Error()).To(ContainSubstring("use resourceClaimTemplateName"))

		// The edit role may create claim templates; kueue-guard's cache sees
		// one a moment after, and until then refuses what it cannot count.
		eight, four, two := claimTemplate(gpuClass, 8), claimTemplate(gpuClass, 4), claimTemplate(gpuClass, 2)
		fpga := claimTemplate("fpga.example.com", 1)
		for _, t := range []*resourcev1.ResourceClaimTemplate{eight, four, two, fpga} {
			Expect(alice.Create(ctx, t)).To(Succeed())
		}
		Eventually(func() error {
			return alice.Create(ctx, claiming(job(1, 0), eight.Name), client.DryRunAll)
		}).Should(MatchError(ContainSubstring("requests 8 GPUs (nvidia.com/gpu)")))
		denied(alice.Create(ctx, claiming(job(1, 0), eight.Name)), "kueue_guard.max_gpus_per_workload")
		// Claimed and requested GPUs add up: 4 + 1.
		err = alice.Create(ctx, claiming(job(1, 1), four.Name))
		denied(err, "kueue_guard.max_gpus_per_workload")
		Expect(err.Error()).To(ContainSubstring("requests 5 GPUs (nvidia.com/gpu)"))

		Eventually(func() error {
			return alice.Create(ctx, claiming(job(1, 0), fpga.Name), client.DryRunAll)
		}).Should(MatchError(ContainSubstring("DeviceClass fpga.example.com is not mapped")))
		denied(alice.Create(ctx, claiming(job(1, 0), fpga.Name)), "kueue_guard.dra_claims_counted")

		within := queued(claiming(job(1, 1), two.Name), draQueue).(*batchv1.Job)
		Eventually(func() error { return alice.Create(ctx, within.DeepCopy(), client.DryRunAll) }).Should(Succeed())
		Expect(alice.Create(ctx, within)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(chargedGPUs(g, within)).To(Equal("3"), "1 requested and 2 claimed, as the input counted them")
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("an extended resource a DeviceClass backs counts as Kueue charges it: 8 refused under a cap of 4, 2 admitted as 2 nvidia.com/gpu", func() {
		// An admin's DeviceClass serves example.com/gpu through DRA; Kueue
		// charges it under the class's mapped name, which the cap counts.
		dc := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: gpuClass},
			Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: new("example.com/gpu")}}
		Expect(admin.Create(ctx, dc)).To(Succeed())
		DeferCleanup(func() { Expect(admin.Delete(ctx, dc)).To(Succeed()) })
		asking := func(n string) *batchv1.Job {
			j := job(1, 0)
			res := j.Spec.Template.Spec.Containers[0].Resources
			res.Requests["example.com/gpu"], res.Limits["example.com/gpu"] = resource.MustParse(n), resource.MustParse(n)
			return j
		}
		Eventually(func() error { return alice.Create(ctx, asking("8"), client.DryRunAll) }).
			Should(MatchError(ContainSubstring("requests 8 GPUs (nvidia.com/gpu)")))
		denied(alice.Create(ctx, asking("8")), "kueue_guard.max_gpus_per_workload")

		within := queued(asking("2"), draQueue).(*batchv1.Job)
		Expect(alice.Create(ctx, within)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(chargedGPUs(g, within)).To(Equal("2"), "charged as nvidia.com/gpu, as the input counted it")
		}).WithTimeout(time.Minute).Should(Succeed())
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

// claimTemplate is a ResourceClaimTemplate in the tenant's namespace claiming
// count devices of a DRA device class.
func claimTemplate(class string, count int64) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("claim")},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "devices", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}}}}}}
}

// claiming gives j's pods a claim from the template.
func claiming(j *batchv1.Job, template string) *batchv1.Job {
	j.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "devices", ResourceClaimTemplateName: new(template)}}
	return j
}

// chargedGPUs is what Kueue's admission of j's Workload charges in GPUs.
func chargedGPUs(g Gomega, j *batchv1.Job) string {
	wls := &kueue.WorkloadList{}
	g.Expect(admin.List(ctx, wls, client.InNamespace(j.Namespace))).To(Succeed())
	for i := range wls.Items {
		wl := &wls.Items[i]
		if len(wl.OwnerReferences) == 1 && wl.OwnerReferences[0].UID == j.UID {
			g.Expect(wl.Status.Admission).NotTo(BeNil(), "admitted")
			usage := wl.Status.Admission.PodSetAssignments[0].ResourceUsage[gpu]
			return usage.String()
		}
	}
	g.Expect(j.UID).To(BeEmpty(), "no Workload of the Job yet")
	return ""
}
