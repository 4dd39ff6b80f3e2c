package simwarn_test

import (
	"github.com/google/go-cmp/cmp"

	"github.com/kueue-guard/kueue-guard/pkg/schedsim"
	"github.com/kueue-guard/kueue-guard/pkg/simwarn"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var gpu = []schedsim.PodSetFlavors{{Name: "main", Count: 4, Flavors: map[string]string{"nvidia.com/gpu": "a100", "cpu": "default"}}}

var _ = DescribeTable("Message says a verdict in one line",
	func(r schedsim.Result, of, want string) {
		Expect(cmp.Diff(want, simwarn.Message(&r, of))).To(BeEmpty())
	},
	Entry("now", schedsim.Result{Verdict: schedsim.Now, ClusterQueue: "cq-gpu", PodSets: gpu},
		"", "Kueue would admit it now in ClusterQueue cq-gpu (main: cpu → default, nvidia.com/gpu → a100)"),
	Entry("now, borrowing and preempting", schedsim.Result{Verdict: schedsim.Now, ClusterQueue: "cq-gpu", PodSets: gpu, Borrows: true,
		Preempts: []schedsim.Victim{{Name: "a"}, {Name: "b"}}},
		"", "Kueue would admit it now in ClusterQueue cq-gpu (main: cpu → default, nvidia.com/gpu → a100), borrowing from its cohort, preempting 2 workload(s)"),
	Entry("wait for quota, behind others", schedsim.Result{Verdict: schedsim.Wait, ClusterQueue: "cq-gpu",
		Missing: []schedsim.Shortfall{{Flavor: "a100", Resource: "nvidia.com/gpu", Requested: "8", Available: "2"}},
		Ahead:   &schedsim.Ahead{ClusterQueue: 3, LocalQueue: 1}},
		"", "would wait: ClusterQueue cq-gpu has 2 of the 8 nvidia.com/gpu of flavor a100 it needs; 3 workload(s) ahead"),
	Entry("wait on a held queue", schedsim.Result{Verdict: schedsim.Wait, ClusterQueue: "cq", Message: "LocalQueue q is on hold (stopPolicy Hold)"},
		"", "would wait: LocalQueue q is on hold (stopPolicy Hold)"),
	Entry("never, one pod at a time", schedsim.Result{Verdict: schedsim.Never, Reason: "NoMatchingFlavor", Message: "flavor a100 doesn't match node affinity"},
		"one pod", "Kueue would never admit it: NoMatchingFlavor: flavor a100 doesn't match node affinity (Kueue admits it one pod at a time)"),
	Entry("never, without a reason", schedsim.Result{Verdict: schedsim.Never, Message: "resource x unavailable in ClusterQueue"},
		"", "Kueue would never admit it: resource x unavailable in ClusterQueue"),
)
