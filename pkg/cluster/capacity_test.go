package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ClusterQueue capacity over a cohort tree", func() {
	q := resource.MustParse
	gpu := corev1.ResourceName("nvidia.com/gpu")
	cq := func(name, cohort string, quota kueue.ResourceQuota) kueue.ClusterQueue {
		quota.Name = gpu
		return kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ClusterQueueSpec{
			CohortName: kueue.CohortReference(cohort),
			ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{gpu},
				Flavors: []kueue.FlavorQuotas{{Name: "a100", Resources: []kueue.ResourceQuota{quota}}}}}}}
	}
	flavors := []kueue.ResourceFlavor{{ObjectMeta: metav1.ObjectMeta{Name: "a100"}}}
	// org (8 GPUs of its own) ← team (no quota) ← cq-a (2, borrows at most 3),
	// cq-b (4, lends at most 1); cq-solo has no cohort.
	cohorts := []kueue.Cohort{
		{ObjectMeta: metav1.ObjectMeta{Name: "org"}, Spec: kueue.CohortSpec{ResourceGroups: []kueue.ResourceGroup{{
			CoveredResources: []corev1.ResourceName{gpu},
			Flavors:          []kueue.FlavorQuotas{{Name: "a100", Resources: []kueue.ResourceQuota{{Name: gpu, NominalQuota: q("8")}}}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Spec: kueue.CohortSpec{ParentName: "org"}},
	}
	three, one := q("3"), q("1")
	cqs := []kueue.ClusterQueue{
		cq("cq-a", "team", kueue.ResourceQuota{NominalQuota: q("2"), BorrowingLimit: &three}),
		cq("cq-b", "team", kueue.ResourceQuota{NominalQuota: q("4"), LendingLimit: &one}),
		cq("cq-solo", "", kueue.ResourceQuota{NominalQuota: q("5")}),
	}
	max := func(caps map[string][]Capacity, name string) int64 {
		Expect(caps[name]).To(HaveLen(1), name)
		return caps[name][0].Max.Value()
	}

	It("is Kueue's own: nominal plus what the tree lends, within borrowing limits", func() {
		caps, err := Capacities(context.Background(), flavors, cohorts, cqs)
		Expect(err).NotTo(HaveOccurred())
		Expect(max(caps, "cq-a")).To(BeEquivalentTo(5), "2 own + at most 3 borrowed")
		Expect(max(caps, "cq-b")).To(BeEquivalentTo(4+8+2), "its own 4, org's 8 and all of cq-a's 2 (cq-a lends without a limit)")
		Expect(max(caps, "cq-solo")).To(BeEquivalentTo(5))
	})

	It("is the structure's even while a flavor does not exist yet", func() {
		caps, err := Capacities(context.Background(), nil, cohorts, cqs)
		Expect(err).NotTo(HaveOccurred())
		Expect(max(caps, "cq-a")).To(BeEquivalentTo(5))
	})
})
