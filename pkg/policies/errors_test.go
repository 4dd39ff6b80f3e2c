package policies_test

import (
	"errors"
	"path/filepath"

	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A refused policy set", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

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
			"net.rego", 4, "http.send is not offered to kueue-guard policies"),
		Entry("net.lookup_ip_addr", map[string]string{"dns.rego": "package x\n\ndeny contains msg if {\n  net.lookup_ip_addr(\"example.com\")\n  msg := \"x\"\n}\n"},
			"dns.rego", 4, "net.lookup_ip_addr is not offered"),
		Entry("opa.runtime", map[string]string{"env.rego": "package x\n\ndeny contains msg if {\n  msg := opa.runtime().env.HOME\n}\n"},
			"env.rego", 4, "opa.runtime is not offered"),
		Entry("time.now_ns, not opted into", map[string]string{"clock.rego": "package x\n\ndeny contains msg if {\n  time.now_ns() > 0\n  msg := \"x\"\n}\n"},
			"clock.rego", 4, "time.now_ns is not deterministic or not bounded, so kueue-guard offers it only when an admin lists it in policies.allowBuiltins"),
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
})
