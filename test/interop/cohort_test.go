package interop

import (
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A cohort tree: cohort "tree" with 4 GPUs of its own; in it, ClusterQueue
// "borrower" (2 GPUs, no borrowing limit) and "sibling" (4 GPUs, lends at most 1).
// The most borrower can ever admit is 2 + 4 + 1 = 7 GPUs: Kueue admits a 7-GPU
// Job there, and kueue-guard's fits_cluster_queue and --explain say it fits; an
// 8-GPU Job Kueue never admits, and both say it never fits.
var _ = Describe("capacity over a cohort tree", Ordered, func() {
	const ns, gpu = "interop-cohort", corev1.ResourceName("nvidia.com/gpu")
	policyDir := ""

	BeforeAll(func() {
		q := resource.MustParse
		quota := func(n string, lending *resource.Quantity) []kueue.ResourceGroup {
			return []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{gpu},
				Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{{Name: gpu, NominalQuota: q(n), LendingLimit: lending}}}}}}
		}
		Expect(admin.Create(ctx, &kueue.Cohort{ObjectMeta: metav1.ObjectMeta{Name: "tree"},
			Spec: kueue.CohortSpec{ResourceGroups: quota("4", nil)}})).To(Succeed())
		one := q("1")
		for name, rg := range map[string][]kueue.ResourceGroup{"borrower": quota("2", nil), "sibling": quota("4", &one)} {
			Expect(admin.Create(ctx, &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: kueue.ClusterQueueSpec{CohortName: "tree", NamespaceSelector: &metav1.LabelSelector{}, ResourceGroups: rg}})).To(Succeed())
		}
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrower"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "borrower"}})).To(Succeed())
		Eventually(func(g Gomega) {
			cq := &kueue.ClusterQueue{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Name: "borrower"}, cq)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive)).To(BeTrue())
		}, "30s").Should(Succeed())
		policyDir = GinkgoT().TempDir()
		_, err := testenv.CopyShippedPolicies(policyDir)
		Expect(err).NotTo(HaveOccurred())
	})

	gpuJob := func(gpus int) *batchv1.Job {
		res := corev1.ResourceList{gpu: resource.MustParse("1")}
		return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gpus-%d", gpus),
				Labels: map[string]string{integrations.QueueNameLabel: "borrower", "kueue.x-k8s.io/max-exec-time-seconds": "60"}},
			Spec: batchv1.JobSpec{Parallelism: new(int32(gpus)), Completions: new(int32(gpus)), PodReplacementPolicy: new(batchv1.Failed),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}}}
	}

	// reviewed runs kueue-guard's reviewer, with the shipped policies and
	// --explain, against the live cluster's state.
	reviewed := func(j *batchv1.Job) *review.Object {
		state, err := review.ListCluster(ctx, env.Config, config.DefaultKueueNamespace)
		Expect(err).NotTo(HaveOccurred())
		data, err := yaml.Marshal(j)
		Expect(err).NotTo(HaveOccurred())
		ms, errs := review.Parse("job.yaml", data)
		Expect(errs).To(BeEmpty())
		rep, err := review.Review(ctx, review.Options{State: state, PolicyDir: policyDir, Explain: true,
			User: authenticationv1.UserInfo{Username: "alice"}}, ms, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Objects).To(HaveLen(1))
		return rep.Objects[0]
	}
	fitsDenied := func(o *review.Object) bool {
		for _, f := range o.Findings {
			if f.Rule == "kueue_guard.fits_cluster_queue" && f.Enforcement == "deny" {
				return true
			}
		}
		return false
	}

	It("admits 7 GPUs, and kueue-guard agrees it fits", func() {
		j := gpuJob(7)
		o := reviewed(j)
		Expect(fitsDenied(o)).To(BeFalse(), "%+v", o.Findings)
		Expect(o.Placement.Verdict).To(Equal(review.VerdictFits))
		Expect(admin.Create(ctx, j)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
			g.Expect(ptr.Deref(j.Spec.Suspend, true)).To(BeFalse(), "Kueue admits and unsuspends it")
		}, 30*time.Second).Should(Succeed())
		Expect(admin.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	})

	It("never admits 8 GPUs, and kueue-guard denies it as never fitting", func() {
		j := gpuJob(8)
		o := reviewed(j)
		Expect(fitsDenied(o)).To(BeTrue(), "%+v", o.Findings)
		Expect(o.Placement.Verdict).To(Equal(review.VerdictNeverFits))
		// Kueue itself, with the whole tree free: it tries, reserves no quota
		// (the Workload's QuotaReserved condition says why), and the Job stays
		// suspended.
		Expect(admin.Create(ctx, j)).To(Succeed())
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), u)).To(Succeed())
		Eventually(func(g Gomega) {
			wl := ownedWorkload(u)
			c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("insufficient"))
		}, 30*time.Second).Should(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
		Expect(ptr.Deref(j.Spec.Suspend, false)).To(BeTrue())
	})
})
