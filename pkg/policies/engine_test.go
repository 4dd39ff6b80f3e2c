package policies_test

import (
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The engine's lifecycle", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("accepts an empty directory as an empty, ready set", func() {
		e := loadedEngine(dir)
		Expect(e.Ready()).To(BeTrue())
		Expect(e.Policies()).To(BeEmpty())
	})

	It("does not recompile an unchanged directory", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("x", "", `deny contains "x" if false`)})
		e, _ := newEngine(dir)
		Expect(e.Load()).To(Succeed())
		Expect(e.Load()).To(Succeed())
		v, _ := e.Version()
		Expect(v).To(Equal(uint64(1)))
		Expect(metricValue(e.Metrics().Loads)).To(Equal(1.0))
		// Test files do not change what is served.
		writeFiles(dir, map[string]string{"p_test.rego": "package x_test\n\ntest_x if true\n"})
		Expect(e.Load()).To(Succeed())
		v, _ = e.Version()
		Expect(v).To(Equal(uint64(1)))
	})

	It("counts a refused set once, not on every re-read", func() {
		writeFiles(dir, map[string]string{"p.rego": "package x\n\ndeny contains"})
		e, _ := newEngine(dir)
		Expect(e.Load()).NotTo(Succeed())
		Expect(e.Load()).NotTo(Succeed())
		Expect(metricValue(e.Metrics().LoadErrors)).To(Equal(1.0))
	})

	It("rejects bad options", func() {
		_, err := policies.NewEngine(policies.Options{})
		Expect(err).To(HaveOccurred())
		_, err = policies.NewEngine(policies.Options{Directory: dir, OnError: "maybe"})
		Expect(err).To(MatchError(ContainSubstring("policies.onError")))
	})

	It("fails every request by onError until a set is loaded", func() {
		e, _ := newEngine(dir)
		d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		Expect(d.Denials()).To(HaveLen(1))
		Expect(d.Denials()[0].Message).To(ContainSubstring("no policy set has been loaded"))
	})
})
