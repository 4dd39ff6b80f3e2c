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
