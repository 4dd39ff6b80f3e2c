package policies_test

import (
	"errors"
	"path/filepath"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Discovering the policies of a directory", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("finds every package that defines deny or warn, with its METADATA", func() {
		writeFiles(dir, map[string]string{
			"a.rego": policy("kueue_guard.alpha", "warn", `deny contains "a" if false`),
			"b.rego": `# METADATA
# title: Bravo
# description: Checks bravo things.
package team.bravo

warn contains "b" if false
`,
			"nested/c.rego":     policy("team.charlie", "dryrun", `deny contains "c" if false`),
			"nested/c_2.rego":   "package team.charlie\n\nwarn contains \"c2\" if false\n",
			"helpers.rego":      "package team.lib\n\nhelper := 1\n",
			"quoted.rego":       "package team[\"delta-echo\"]\n\ndeny contains \"d\" if false\n",
			"a_test.rego":       "package kueue_guard.alpha_test\n\ndeny contains \"test packages are not served\" if true\n",
			".hidden/x.rego":    "package hidden\n\ndeny contains \"hidden\" if true\n",
			"README.md":         "not a policy",
			"fixture.yaml":      "not: data",
			"nested/notes.json": "{not json",
		})
		e := loadedEngine(dir)
		ids := []string{}
		for _, p := range e.Policies() {
			ids = append(ids, p.ID)
		}
		Expect(ids).To(Equal([]string{"kueue_guard.alpha", "team.bravo", "team.charlie", `team["delta-echo"]`}))

		byID := map[string]*policies.Policy{}
		for _, p := range e.Policies() {
			byID[p.ID] = p
		}
		Expect(byID["kueue_guard.alpha"].Enforcement).To(Equal(admission.EnforcementWarn))
		Expect(byID["team.bravo"].Enforcement).To(Equal(admission.EnforcementDeny), "deny is the default")
		Expect(byID["team.bravo"].Title).To(Equal("Bravo"))
		Expect(byID["team.bravo"].Description).To(Equal("Checks bravo things."))
		Expect(byID["team.bravo"].HasWarn).To(BeTrue())
		Expect(byID["team.bravo"].HasDeny).To(BeFalse())
		Expect(byID["team.charlie"].Enforcement).To(Equal(admission.EnforcementDryRun))
		Expect(byID["team.charlie"].Files).To(ConsistOf(filepath.Join(dir, "nested/c.rego"), filepath.Join(dir, "nested/c_2.rego")))
		Expect(byID["team.charlie"].HasDeny && byID["team.charlie"].HasWarn).To(BeTrue())
		Expect(e.Ready()).To(BeTrue())
		v, hash := e.Version()
		Expect(v).To(Equal(uint64(1)))
		Expect(hash).To(HaveLen(64))
	})
})

var _ = Describe("custom.severity", func() {
	It("is read from METADATA, medium when unset, and a value outside the list refuses the set with file and line", func() {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{
			"a.rego": "# METADATA\n# custom:\n#   severity: critical\npackage team.a\n\ndeny contains \"a\" if false\n",
			"b.rego": "package team.b\n\ndeny contains \"b\" if false\n",
		})
		e := loadedEngine(dir)
		sev := map[string]string{}
		for _, p := range e.Policies() {
			sev[p.ID] = p.Severity
		}
		Expect(sev).To(Equal(map[string]string{"team.a": "critical", "team.b": policies.DefaultSeverity}))

		writeFiles(dir, map[string]string{"a.rego": "# METADATA\n# custom:\n#   severity: urgent\npackage team.a\n\ndeny contains \"a\" if false\n"})
		err := e.Load()
		var le *policies.LoadError
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Problems[0].File).To(Equal(filepath.Join(dir, "a.rego")))
		Expect(le.Problems[0].Line).To(Equal(1))
		Expect(le.Problems[0].Message).To(ContainSubstring("custom.severity must be one of critical, high, medium, low, info; got urgent"))
	})
})
