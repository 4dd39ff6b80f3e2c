package schedsim_test

import (
	"context"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/schedsim"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const ns = "team"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// admitted is a Workload holding cpu of flavor "a" in ClusterQueue cq.
func admitted(name, cq, cpu string, priority int32) kueue.Workload {
	return *utiltesting.MakeWorkload(name, ns).Queue(kueue.LocalQueueName(cq)).Priority(priority).Creation(t0).
		Request(corev1.ResourceCPU, cpu).
		ReserveQuotaAt(utiltesting.MakeAdmission(kueue.ClusterQueueReference(cq)).PodSets(
			utiltesting.MakePodSetAssignment(kueue.DefaultPodSetName).Assignment(corev1.ResourceCPU, "a", cpu).Obj()).Obj(), t0).Obj()
}

func pending(name, cq, cpu string, priority int32) kueue.Workload {
	return *utiltesting.MakeWorkload(name, ns).Queue(kueue.LocalQueueName(cq)).Priority(priority).Creation(t0).
		Request(corev1.ResourceCPU, cpu).Obj()
}

func newWorkload(cq, cpu string, priority int32) *kueueworkload.Info {
	return kueueworkload.NewInfo(utiltesting.MakeWorkload("new", ns).Queue(kueue.LocalQueueName(cq)).Priority(priority).
		Request(corev1.ResourceCPU, cpu).Obj())
}

// base: flavors a (4 cpu in cq "small", 8 in "other") and b (node label
// pool=b, 2 cpu in "small"); "small" and "other" share cohort "co", and
// "small" preempts lower priorities within itself; "strict" is StrictFIFO
// with 4 cpu of a, alone.
func base() schedsim.Cluster {
	preempting := kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}
	cqs := []kueue.ClusterQueue{
		*utiltesting.MakeClusterQueue("small").Cohort("co").Preemption(preempting).ResourceGroup(
			*utiltesting.MakeFlavorQuotas("a").Resource(corev1.ResourceCPU, "4").Obj(),
			*utiltesting.MakeFlavorQuotas("b").Resource(corev1.ResourceCPU, "2").Obj()).Obj(),
		*utiltesting.MakeClusterQueue("other").Cohort("co").ResourceGroup(
			*utiltesting.MakeFlavorQuotas("a").Resource(corev1.ResourceCPU, "8").Obj()).Obj(),
		*utiltesting.MakeClusterQueue("strict").QueueingStrategy(kueue.StrictFIFO).ResourceGroup(
			*utiltesting.MakeFlavorQuotas("a").Resource(corev1.ResourceCPU, "4").Obj()).Obj(),
	}
	for i := range cqs {
		cqs[i].Spec.NamespaceSelector = &metav1.LabelSelector{}
	}
	var lqs []kueue.LocalQueue
	for _, cq := range []string{"small", "other", "strict"} {
		lqs = append(lqs, *utiltesting.MakeLocalQueue(cq, ns).ClusterQueue(cq).Obj())
	}
	lqs = append(lqs, *utiltesting.MakeLocalQueue("held", ns).ClusterQueue("small").StopPolicy(kueue.Hold).Obj())
	return schedsim.Cluster{
		KueueObjects: cluster.KueueObjects{
			Flavors:       []kueue.ResourceFlavor{*utiltesting.MakeResourceFlavor("a").Obj(), *utiltesting.MakeResourceFlavor("b").NodeLabel("pool", "b").Obj()},
			ClusterQueues: cqs,
			LocalQueues:   lqs,
		},
		Namespace: func(name string) (*corev1.Namespace, bool) {
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}}, name == ns
		},
	}
}

var _ = DescribeTable("Simulate gives Kueue's verdict",
	func(workloads []kueue.Workload, wl *kueueworkload.Info, want schedsim.Result) {
		c := base()
		c.Workloads = workloads
		sim, err := schedsim.New(context.Background(), c)
		Expect(err).NotTo(HaveOccurred())
		got := sim.Simulate(context.Background(), wl)
		Expect(cmp.Diff(&want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(schedsim.Result{}, "Message"))).To(BeEmpty())
	},
	Entry("fits in its own quota now", nil, newWorkload("small", "3", 0), schedsim.Result{Verdict: schedsim.Now,
		LocalQueue: "small", ClusterQueue: "small", Ahead: &schedsim.Ahead{},
		PodSets: []schedsim.PodSetFlavors{{Name: "main", Count: 1, Flavors: map[string]string{"cpu": "a"}}}}),
	Entry("borrows from its cohort", nil, newWorkload("small", "10", 0), schedsim.Result{Verdict: schedsim.Now,
		LocalQueue: "small", ClusterQueue: "small", Ahead: &schedsim.Ahead{}, Borrows: true,
		PodSets: []schedsim.PodSetFlavors{{Name: "main", Count: 1, Flavors: map[string]string{"cpu": "a"}}}}),
	Entry("falls to the second flavor when the first is used", []kueue.Workload{admitted("x", "small", "4", 0), admitted("y", "other", "8", 0)},
		newWorkload("small", "2", 0), schedsim.Result{Verdict: schedsim.Now, LocalQueue: "small", ClusterQueue: "small", Ahead: &schedsim.Ahead{},
			PodSets: []schedsim.PodSetFlavors{{Name: "main", Count: 1, Flavors: map[string]string{"cpu": "b"}}}}),
	Entry("waits while its cohort's quota is used", []kueue.Workload{admitted("x", "small", "4", 0), admitted("y", "other", "8", 0)},
		newWorkload("small", "3", 0), schedsim.Result{Verdict: schedsim.Wait, Reason: "WaitingForQuota", LocalQueue: "small", ClusterQueue: "small",
			Ahead:   &schedsim.Ahead{},
			PodSets: []schedsim.PodSetFlavors{{Name: "main", Count: 1, Flavors: map[string]string{"cpu": "a"}}},
			Missing: []schedsim.Shortfall{{Flavor: "a", Resource: "cpu", Requested: "3", Available: "0"}}}),
	Entry("never fits beyond the cohort's quota", nil, newWorkload("small", "13", 0), schedsim.Result{Verdict: schedsim.Never,
		Reason: "ExceedsMaxQuota", LocalQueue: "small", ClusterQueue: "small", Ahead: &schedsim.Ahead{}}),
	Entry("preempts a lower priority in its queue", []kueue.Workload{admitted("low", "small", "4", 1), admitted("y", "other", "8", 0)},
		newWorkload("small", "3", 10), schedsim.Result{Verdict: schedsim.Now, LocalQueue: "small", ClusterQueue: "small", Ahead: &schedsim.Ahead{},
			PodSets:  []schedsim.PodSetFlavors{{Name: "main", Count: 1, Flavors: map[string]string{"cpu": "a"}}},
			Preempts: []schedsim.Victim{{Namespace: ns, Name: "low", ClusterQueue: "small", Reason: "InClusterQueue"}}}),
	Entry("counts the pending workloads ahead of it", []kueue.Workload{admitted("x", "small", "4", 10), admitted("y", "other", "8", 0),
		pending("p1", "small", "4", 0), pending("p2", "small", "4", 5), pending("p3", "other", "4", 0)},
		newWorkload("small", "3", 5), schedsim.Result{Verdict: schedsim.Wait, Reason: "WaitingForQuota", LocalQueue: "small", ClusterQueue: "small",
			Ahead:   &schedsim.Ahead{LocalQueue: 1, ClusterQueue: 1},
			PodSets: []schedsim.PodSetFlavors{{Name: "main", Count: 1, Flavors: map[string]string{"cpu": "a"}}},
			Missing: []schedsim.Shortfall{{Flavor: "a", Resource: "cpu", Requested: "3", Available: "0"}}}),
	Entry("waits behind a StrictFIFO head although it fits", []kueue.Workload{pending("head", "strict", "5", 0)},
		newWorkload("strict", "1", 0), schedsim.Result{Verdict: schedsim.Wait, Reason: "WaitingForQuota", LocalQueue: "strict", ClusterQueue: "strict",
			Ahead:   &schedsim.Ahead{LocalQueue: 1, ClusterQueue: 1, Blocking: 1},
			PodSets: []schedsim.PodSetFlavors{{Name: "main", Count: 1, Flavors: map[string]string{"cpu": "a"}}}}),
	Entry("waits while its LocalQueue is on hold", nil, newWorkload("held", "1", 0), schedsim.Result{Verdict: schedsim.Wait,
		Reason: "Suspended", LocalQueue: "held", ClusterQueue: "small"}),
	Entry("never without its LocalQueue", nil, newWorkload("nope", "1", 0), schedsim.Result{Verdict: schedsim.Never,
		Reason: "Misconfigured", LocalQueue: "nope"}),
)

var _ = Describe("Simulate on a pending Workload of the cluster", func() {
	It("counts only the workloads Kueue's order puts before it, never itself", func() {
		early := pending("early", "small", "4", 0)
		early.UID = "uid-early"
		late := pending("late", "small", "4", 0)
		late.UID, late.CreationTimestamp = "uid-late", metav1.NewTime(t0.Add(time.Hour))
		c := base()
		c.Workloads = []kueue.Workload{admitted("x", "small", "4", 10), admitted("y", "other", "8", 0), early, late}
		sim, err := schedsim.New(context.Background(), c)
		Expect(err).NotTo(HaveOccurred())
		for wl, want := range map[*kueue.Workload]int{&early: 0, &late: 1} {
			got := sim.Simulate(context.Background(), kueueworkload.NewInfo(wl.DeepCopy()))
			Expect(got.Verdict).To(Equal(schedsim.Wait))
			Expect(got.Ahead).To(Equal(&schedsim.Ahead{LocalQueue: want, ClusterQueue: want}), wl.Name)
		}
	})
})
