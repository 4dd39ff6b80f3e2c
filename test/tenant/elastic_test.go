package tenant

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/constants"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Kueue 0.19 runs elastic Jobs (ElasticJobsViaWorkloadSlices, on by default):
// a running Job annotated kueue.x-k8s.io/elastic-job may change its
// parallelism, and Kueue admits the new size as a new workload slice. The
// growth is judged like any other: within the cap it goes to Kueue, past it
// the policies refuse it.
var _ = Describe("an elastic Job", func() {
	It("is scaled as Kueue allows within the GPU cap, and refused past it by the policies", func() {
		// Its own ClusterQueue, so that no other spec's admitted jobs hold the
		// GPUs it grows into.
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "cq-elastic"}, Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, gpu},
				Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("10")},
					{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("64Gi")},
					{Name: gpu, NominalQuota: resource.MustParse("8")},
				}}},
			}},
		}}
		Expect(admin.Create(ctx, cq)).To(Succeed())
		Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "elastic"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "cq-elastic"}})).To(Succeed())
		j := queued(job(2, 1), "elastic").(*batchv1.Job)
		j.Annotations = map[string]string{kueueconstants.ElasticJobAnnotation: "true"}
		j.Spec.Completions = ptr.To[int32](8) // room to grow: Kueue counts min(parallelism, completions)
		Expect(alice.Create(ctx, j)).To(Succeed())
		running := func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
			g.Expect(ptr.Deref(j.Spec.Suspend, true)).To(BeFalse(), "Kueue admitted and resumed it")
		}
		Eventually(running, 2*time.Minute).Should(Succeed())

		By("growing it from 2 to 3 GPUs, within team-a's cap of " + gpuLimit)
		patch := client.MergeFrom(j.DeepCopy())
		j.Spec.Parallelism = ptr.To[int32](3)
		Expect(alice.Patch(ctx, j, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(admittedCounts(g, j)).To(ContainElement(int32(3)), "Kueue admits the new size as a workload slice")
		}, 2*time.Minute).Should(Succeed())
		Eventually(running, time.Minute).Should(Succeed())

		By("growing it to 5 GPUs, past the cap")
		get(j)
		patch = client.MergeFrom(j.DeepCopy())
		j.Spec.Parallelism = ptr.To[int32](5)
		denied(alice.Patch(ctx, j, patch), "kueue_guard.max_gpus_per_workload")
		Expect(ptr.Deref(get(j).(*batchv1.Job).Spec.Parallelism, 0)).To(Equal(int32(3)))

		By("shrinking it, which no policy judges")
		patch = client.MergeFrom(j.DeepCopy())
		j.Spec.Parallelism = ptr.To[int32](1)
		Expect(alice.Patch(ctx, j, patch)).To(Succeed())
	})
})

// admittedCounts are the pod counts of the admitted Workloads (slices) Kueue
// made of j.
func admittedCounts(g Gomega, j *batchv1.Job) []int32 {
	wls := &kueue.WorkloadList{}
	g.Expect(admin.List(ctx, wls, client.InNamespace(j.Namespace))).To(Succeed())
	var out []int32
	for i := range wls.Items {
		wl := &wls.Items[i]
		for _, o := range wl.OwnerReferences {
			if o.UID == j.UID && wl.Status.Admission != nil && len(wl.Spec.PodSets) == 1 {
				out = append(out, wl.Spec.PodSets[0].Count)
			}
		}
	}
	return out
}
