package preflight

import (
	"github.com/onsi/ginkgo/v2"

	. "github.com/onsi/gomega"
)

var _ = ginkgo.Describe("the kinds preflight lists for queued workloads", func() {
	keys := func(t Target, configs ...KueueConfiguration) []string {
		var out []string
		for _, in := range listedKinds(t, configs) {
			out = append(out, in.Key())
		}
		return out
	}

	ginkgo.It("are those outside the managed set, for managed", func() {
		Expect(keys(TargetManaged)).To(ContainElements("PyTorchJob.kubeflow.org", "AppWrapper.workload.codeflare.dev"))
		Expect(keys(TargetManaged)).NotTo(ContainElement("Job.batch"))
	})

	ginkgo.It("are those no Configuration found enables, for oss, external frameworks counted as Kueue counts them", func() {
		Expect(keys(TargetOSS)).To(BeEmpty(), "no Configuration: nothing to compare with")
		kc := KueueConfiguration{Frameworks: []string{"batch/job"}, External: []string{"AppWrapper.v1beta2.workload.codeflare.dev"}}
		Expect(keys(TargetOSS, kc)).To(ContainElement("PyTorchJob.kubeflow.org"))
		Expect(keys(TargetOSS, kc)).NotTo(ContainElements("Job.batch", "CronJob.batch", "AppWrapper.workload.codeflare.dev"))
	})
})

var _ = ginkgo.Describe("a manager's Configuration", func() {
	ginkgo.It("is read as Kueue reads it, its --feature-gates over the Configuration's", func() {
		kc := KueueConfiguration{Source: "kueue-system/kueue-manager-config"}
		Expect(parseKueueConfig(&kc, `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
manageJobsWithoutQueueName: true
featureGates: {TopologyAwareScheduling: false, LocalQueueMetrics: true}
integrations:
  frameworks: [batch/job, kubeflow.org/pytorchjob]
  externalFrameworks: [AppWrapper.v1beta2.workload.codeflare.dev]
`, "kueue-system", "TopologyAwareScheduling=true")).To(Succeed())
		Expect(kc.Frameworks).To(Equal([]string{"batch/job", "kubeflow.org/pytorchjob"}))
		Expect(kc.External).To(Equal([]string{"AppWrapper.v1beta2.workload.codeflare.dev"}))
		Expect(kc.FeatureGates).To(Equal(map[string]bool{"TopologyAwareScheduling": true, "LocalQueueMetrics": true}))
		Expect(kc.ManageJobsWithoutQueueName).To(BeTrue())

		Expect(parseKueueConfig(&KueueConfiguration{}, "integrations: [", "kueue-system", "")).To(MatchError(ContainSubstring("reading Kueue's Configuration")))
		Expect(parseKueueConfig(&KueueConfiguration{}, "{}", "kueue-system", "Broken")).To(MatchError(ContainSubstring("--feature-gates")))
	})

	ginkgo.It("defaults to batch/job when it lists no frameworks, as Kueue does", func() {
		kc := KueueConfiguration{}
		Expect(parseKueueConfig(&kc, "{}", "kueue-system", "")).To(Succeed())
		Expect(kc.Frameworks).To(Equal([]string{"batch/job"}))
	})
})
