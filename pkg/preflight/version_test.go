package preflight_test

import (
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	pf "github.com/kueue-guard/kueue-guard/pkg/preflight"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("kueue-version", func() {
	withManager := func(version string, gates map[string]bool) *pf.State {
		s := clean(pf.TargetOSS)
		m := ossManager("kueue-system", "kueue-controller-manager")
		m.Version = version
		s.Managers = []pf.Manager{m}
		s.KueueConfigs = []pf.KueueConfiguration{{Manager: m.Identity, Source: "kueue-system/kueue-manager-config",
			Frameworks: []string{"batch/job"}, FeatureGates: gates}}
		return s
	}

	It("passes for the tested minor, naming the release and the Configuration's feature gates", func() {
		c := check(pf.Judge(pf.TargetOSS, withManager("v0.19.2", map[string]bool{"TopologyAwareScheduling": false})), pf.CheckKueueVersion)
		Expect(c.Status).To(Equal(pf.Pass))
		Expect(c.Findings).To(HaveLen(1))
		Expect(c.Findings[0].Message).To(ContainSubstring("Kueue v0.19.2"))
		Expect(c.Findings[0].Message).To(ContainSubstring("TopologyAwareScheduling=false"))
	})

	It("warns for another minor, naming what is known to differ and the fix", func() {
		r := pf.Judge(pf.TargetOSS, withManager("v0.17.0", nil))
		c := check(r, pf.CheckKueueVersion)
		Expect(c.Status).To(Equal(pf.Warn))
		Expect(c.Findings[0].Message).To(ContainSubstring("Kueue v0.17.0; kueue-guard is tested against " + kueuecontroller.TestedVersion))
		Expect(c.Findings[0].Message).To(ContainSubstring("Kueue's defaults"))
		Expect(c.Findings[0].Message).To(ContainSubstring("pod-level resources"))
		Expect(c.Findings[0].Fix).NotTo(BeEmpty())
		Expect(r.ExitCode()).To(Equal(pf.ExitPass), "a warning does not fail the preflight")
	})

	It("warns when the manager names no release", func() {
		c := check(pf.Judge(pf.TargetOSS, withManager("", nil)), pf.CheckKueueVersion)
		Expect(c.Status).To(Equal(pf.Warn))
		Expect(c.Findings[0].Message).To(ContainSubstring("names no Kueue release"))
	})

	It("passes with no Kueue, naming the tested release", func() {
		c := check(pf.Judge(pf.TargetOSS, clean(pf.TargetOSS)), pf.CheckKueueVersion)
		Expect(c.Status).To(Equal(pf.Pass))
		Expect(c.Summary).To(ContainSubstring(kueuecontroller.TestedVersion))
	})
})
