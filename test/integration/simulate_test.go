package integration

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/simwarn"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The simulate warning, through kubectl: ClusterQueue sim-cq has 4 cpu (and
// 100Gi of memory) of flavor sim-flavor. A Workload stored with Kueue's admission holds 3 of
// them (the API server keeps it as Kueue's manager would write it).
var _ = Describe("kubectl apply --dry-run=server with the simulate warning", Ordered, func() {
	var ns string

	BeforeAll(func() {
		Expect(k8sClient.Create(ctx, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "sim-flavor"}})).To(Succeed())
		Expect(k8sClient.Create(ctx, &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "sim-cq"}, Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
				Flavors: []kueue.FlavorQuotas{{Name: "sim-flavor", Resources: []kueue.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("4")},
					{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("100Gi")}}}}}}}})).To(Succeed())
		ns = namespace(nil, nil)
		Expect(k8sClient.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sim"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "sim-cq"}})).To(Succeed())
	})

	dryRun := func(name, cpu string) string {
		GinkgoHelper()
		manifest, err := yaml.Marshal(fixtures.Job(ns, name).Queue("sim").Requests("cpu", cpu).Obj().Object)
		Expect(err).NotTo(HaveOccurred())
		_, stderr, err := env.Kubectl(manifest, "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		return stderr
	}
	simulateWarnings := func(stderr string) []string {
		var out []string
		for l := range strings.SplitSeq(stderr, "\n") {
			if strings.Contains(l, simwarn.Prefix) {
				out = append(out, l)
			}
		}
		return out
	}

	It("says Kueue would admit it now, and where", func() {
		Eventually(func() []string { return simulateWarnings(dryRun("fits", "2")) }).Should(ConsistOf(
			"Warning: " + simwarn.Prefix + "Kueue would admit it now in ClusterQueue sim-cq (main: cpu → sim-flavor, memory → sim-flavor)"))
	})

	It("says it would never be admitted, in Kueue's words", func() {
		Expect(simulateWarnings(dryRun("huge", "10"))).To(ConsistOf(ContainSubstring(
			simwarn.Prefix + "Kueue would never admit it: ExceedsMaxQuota: couldn't assign flavors to pod set main: insufficient quota for cpu in flavor sim-flavor")))
	})

	It("says it would wait once an admitted Workload holds the quota, and what is missing", func() {
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder"}, Spec: kueue.WorkloadSpec{
			QueueName: "sim", PodSets: []kueue.PodSet{{Name: kueue.DefaultPodSetName, Count: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
					Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}}}}}}}
		Expect(k8sClient.Create(ctx, wl)).To(Succeed())
		wl.Status.Admission = &kueue.Admission{ClusterQueue: "sim-cq", PodSetAssignments: []kueue.PodSetAssignment{{
			Name: kueue.DefaultPodSetName, Count: new(int32(1)), Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{corev1.ResourceCPU: "sim-flavor"},
			ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue,
			Reason: "QuotaReserved", Message: "reserved by the test as Kueue would"})
		Expect(k8sClient.Status().Update(ctx, wl)).To(Succeed())

		// The view is rebuilt within a second of the change.
		Eventually(func() []string { return simulateWarnings(dryRun("waits", "2")) }).Should(ConsistOf(
			"Warning: " + simwarn.Prefix + "would wait: ClusterQueue sim-cq has 1 of the 2 cpu of flavor sim-flavor it needs"))
	})

	It("makes no API call for it, under a tenant's burst of dry runs, and warns nothing on a real create (simulation.warn: dryRun)", func() {
		before := serverRequests.snapshot()
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				Expect(simulateWarnings(dryRun(fmt.Sprintf("burst-%d", i), "1"))).To(HaveLen(1))
			})
		}
		wg.Wait()
		// A priority class that does not exist: Kueue would make no Workload of it.
		manifest, err := yaml.Marshal(fixtures.Job(ns, "no-class").Queue("sim").Requests("cpu", "1").
			Label("kueue.x-k8s.io/priority-class", "made-up").Obj().Object)
		Expect(err).NotTo(HaveOccurred())
		_, stderr, err := env.Kubectl(manifest, "apply", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(simulateWarnings(stderr)).To(ConsistOf(ContainSubstring(
			`Kueue would never admit it: Misconfigured: WorkloadPriorityClass "made-up" does not exist`)))
		Expect(serverRequests.snapshot()[len(before):]).To(BeEmpty(), "the server called the API server while simulating")
		c, warnings := clientWithWarnings()
		Expect(c.Create(ctx, fixtures.Job(ns, "real").Queue("sim").Requests("cpu", "1").Obj())).To(Succeed())
		Expect(warnings.All()).NotTo(ContainSubstring(simwarn.Prefix))
	})
})
