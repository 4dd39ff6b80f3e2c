package policies_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

var _ = Describe("Loading a policy directory", func() {
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

	It("loads data.json and data.yaml at their directory's path under data", func() {
		writeFiles(dir, map[string]string{
			"data.yaml":          "limits:\n  gpus: 4\n",
			"teams/ml/data.json": `{"queues": ["gpu"]}`,
			"p.rego": `package kueue_guard.data_check

deny contains sprintf("gpus=%v queues=%v", [data.limits.gpus, data.teams.ml.queues]) if true
`,
		})
		e := loadedEngine(dir)
		ns := namespace("ml", nil, nil)
		d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot(ns))
		Expect(d.Violations).To(HaveLen(1))
		Expect(d.Violations[0].Message).To(Equal(`gpus=4 queues=["gpu"]`))
	})

	It("accepts an empty directory as an empty, ready set", func() {
		e := loadedEngine(dir)
		Expect(e.Ready()).To(BeTrue())
		Expect(e.Policies()).To(BeEmpty())
	})

	DescribeTable("refuses a set with a located, actionable error",
		func(files map[string]string, file string, line int, message string) {
			writeFiles(dir, files)
			e, reg := newEngine(dir)
			err := e.Load()
			Expect(err).To(HaveOccurred())
			var le *policies.LoadError
			Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
			Expect(le.Problems).NotTo(BeEmpty())
			Expect(le.Problems[0].File).To(Equal(filepath.Join(dir, file)))
			Expect(le.Problems[0].Line).To(Equal(line))
			Expect(le.Problems[0].Message).To(ContainSubstring(message))
			Expect(e.Ready()).To(BeFalse())
			Expect(metricValue(e.Metrics().LoadErrors)).To(Equal(1.0))
			Expect(e.ReadyCheck(nil)).To(MatchError(ContainSubstring(message)))
			_ = reg
		},
		Entry("a syntax error", map[string]string{"bad.rego": "package x\n\ndeny contains msg if {\n  msg := \n}\n"},
			"bad.rego", 5, "rego_parse_error"),
		Entry("Rego v0 syntax", map[string]string{"old.rego": "package x\n\ndeny[msg] { msg := \"old\" }\n"},
			"old.rego", 3, "rego_parse_error"),
		Entry("http.send", map[string]string{"net.rego": "package x\n\ndeny contains msg if {\n  resp := http.send({\"method\": \"get\", \"url\": \"https://example.com\"})\n  msg := resp.body\n}\n"},
			"net.rego", 4, "http.send is disabled in kueue-guard policies"),
		Entry("net.lookup_ip_addr", map[string]string{"dns.rego": "package x\n\ndeny contains msg if {\n  net.lookup_ip_addr(\"example.com\")\n  msg := \"x\"\n}\n"},
			"dns.rego", 4, "net.lookup_ip_addr is disabled"),
		Entry("opa.runtime", map[string]string{"env.rego": "package x\n\ndeny contains msg if {\n  msg := opa.runtime().env.HOME\n}\n"},
			"env.rego", 4, "opa.runtime is disabled"),
		Entry("an unknown enforcement", map[string]string{"e.rego": policy("x", "block", `deny contains "x" if false`)},
			"e.rego", 1, "custom.enforcement must be one of deny, warn, dryrun; got block"),
		Entry("a boolean deny", map[string]string{"b.rego": "package x\n\ndeny if input.x\n"},
			"b.rego", 3, "deny must be a set of messages"),
		Entry("a compile error", map[string]string{"u.rego": "package x\n\ndeny contains msg if {\n  msg := undefined_thing\n}\n"},
			"u.rego", 4, "rego_unsafe_var_error"),
		Entry("bad YAML data", map[string]string{"data.yaml": "a: [1, 2\n"},
			"data.yaml", 0, "YAML"),
		Entry("data overlapping a rule", map[string]string{
			"data.json": `{"x": {"deny": ["from data"]}}`,
			"p.rego":    "package x\n\ndeny contains \"rule\" if true\n",
		}, "p.rego", 3, "conflict"),
	)

	It("refuses a directory that does not exist", func() {
		e, _ := newEngine(filepath.Join(dir, "missing"))
		Expect(e.Load()).To(MatchError(ContainSubstring("no such file or directory")))
		Expect(e.Ready()).To(BeFalse())
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

	It("disables the network built-ins in its capabilities", func() {
		names := map[string]bool{}
		for _, b := range policies.Capabilities().Builtins {
			names[b.Name] = true
		}
		for _, b := range policies.DisabledBuiltins() {
			Expect(names).NotTo(HaveKey(b))
		}
		Expect(names).To(HaveKey("net.cidr_contains"), "pure network functions stay")
		Expect(names).To(HaveKey("trace"))
		Expect(policies.Capabilities().AllowNet).To(BeEmpty())
		Expect(policies.Capabilities().AllowNet).NotTo(BeNil())
	})

	It("follows symlinked files", func() {
		real := GinkgoT().TempDir()
		writeFiles(real, map[string]string{"p.rego": policy("linked", "", `deny contains "x" if false`)})
		Expect(os.Symlink(filepath.Join(real, "p.rego"), filepath.Join(dir, "p.rego"))).To(Succeed())
		e := loadedEngine(dir)
		Expect(e.Policies()).To(HaveLen(1))
		_ = context.Background()
	})
})
