package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/kueue-guard/kueue-guard/pkg/chart"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("kueue-guard policy admission", func() {
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := newRootCommand()
		cmd.SetArgs(append([]string{"policy", "admission"}, args...))
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.Execute()
		return out.String(), err
	}

	It("prints every twin the chart installs, with its binding, named as the chart names them", func() {
		out, err := run("--name", "kg")
		Expect(err).NotTo(HaveOccurred())
		for _, g := range chart.AdmissionPolicies() {
			Expect(out).To(ContainSubstring("kind: ValidatingAdmissionPolicy\nmetadata:\n  labels:\n    kueue-guard.io/rule: " +
				g.Rule + "\n  name: kg-" + g.Name + "\n"))
			Expect(out).To(ContainSubstring("kind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: kg-" + g.Name + "\n"))
		}
		Expect(out).To(ContainSubstring("kind: MutatingAdmissionPolicy\n"))
		Expect(out).NotTo(ContainSubstring("__PARAM_"), "every parameter filled in")
		without, err := run("--mutating=false")
		Expect(err).NotTo(HaveOccurred())
		Expect(without).NotTo(ContainSubstring("MutatingAdmissionPolicy"))
	})

	It("takes the parameters from the configuration file, and refuses one it cannot read", func() {
		p := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(p, []byte("apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\n"+
			"integrations: {action: warn}\n"), 0o644)).To(Succeed())
		out, err := run("--config", p)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(out, "validationActions:\n  - Warn")).To(Equal(1), "the integration twin warns, as configured")
		_, err = run("--config", filepath.Join(GinkgoT().TempDir(), "missing.yaml"))
		Expect(err).To(MatchError(ContainSubstring("missing.yaml")))
		Expect(exitCode(err)).To(Equal(2))
	})
})
