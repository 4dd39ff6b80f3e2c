package policies_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"

	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("RunTests", func() {
	var (
		dir string
		out bytes.Buffer
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		out.Reset()
		writeFiles(dir, map[string]string{
			"p.rego":    policy("t.p", "", "deny contains sprintf(\"over %v\", [data.limit]) if input.n > data.limit"),
			"data.yaml": "limit: 3\n",
		})
	})

	It("runs the tests with the data files and reports them as opa test does", func() {
		writeFiles(dir, map[string]string{"p_test.rego": `package t.p_test

import data.t.p

test_over if {
	p.deny == {"over 3"} with input as {"n": 4}
}

test_under if {
	count(p.deny) == 0 with input as {"n": 3}
}
`})
		passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeTrue(), out.String())
		Expect(out.String()).To(MatchRegexp(`(?m)^PASS: 2/2$`))
		Expect(out.String()).NotTo(ContainSubstring("test_over"), "passing tests are only counted")

		out.Reset()
		passed, err = policies.RunTests(context.Background(), dir, &out, policies.TestOptions{Verbose: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeTrue(), out.String())
		test := filepath.Join(dir, "p_test.rego")
		Expect(out.String()).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(test) + `:5:\ndata\.t\.p_test\.test_over: PASS \(.+\)$`))
		Expect(out.String()).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(test) + `:9:\ndata\.t\.p_test\.test_under: PASS \(.+\)$`))
		Expect(out.String()).To(MatchRegexp(`(?m)^PASS: 2/2$`))
	})

	It("reports failures and errors with their location", func() {
		writeFiles(dir, map[string]string{"p_test.rego": `package t.p_test

import data.t.p

test_passes if {
	count(p.deny) == 0 with input as {"n": 1}
}

test_fails if {
	print("debugging")
	p.deny == {"over 4"} with input as {"n": 4}
}

test_errors if {
	to_number("four") == 4
}
`})
		passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeFalse())
		test := filepath.Join(dir, "p_test.rego")
		Expect(out.String()).To(ContainSubstring(test + ":9:\ndata.t.p_test.test_fails: FAIL ("))
		Expect(out.String()).To(MatchRegexp(regexp.QuoteMeta(test+":11:")+`\n\s+`+regexp.QuoteMeta(`p.deny == {"over 4"} with input as {"n": 4}`)),
			"the expression that failed, as opa test reports it")
		Expect(out.String()).To(MatchRegexp(`test_fails: FAIL \(.+\)\n\n\s+debugging\n`), "the print() output of a failing test")
		Expect(out.String()).To(ContainSubstring(test + ":14:\ndata.t.p_test.test_errors: "))
		Expect(out.String()).To(ContainSubstring(test + ":15: eval_builtin_error: to_number"))
		Expect(out.String()).NotTo(ContainSubstring("test_passes"))
		Expect(out.String()).To(MatchRegexp(`(?m)^PASS: 1/3$`))
		Expect(out.String()).To(MatchRegexp(`(?m)^FAIL: 1/3$`))
		Expect(out.String()).To(MatchRegexp(`(?m)^ERROR: 1/3$`))
	})

	It("reports in JSON as opa test --format json", func() {
		writeFiles(dir, map[string]string{"p_test.rego": "package t.p_test\n\ntest_a if true\n\ntest_b if false\n"})
		passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{Format: policies.TestFormatJSON})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeFalse())
		var results []*tester.Result
		Expect(json.Unmarshal(out.Bytes(), &results)).To(Succeed(), out.String())
		Expect(results).To(HaveLen(2))
		Expect(results[0].Name).To(Equal("test_a"))
		Expect(results[0].Pass()).To(BeTrue())
		Expect(results[1].Name).To(Equal("test_b"))
		Expect(results[1].Fail).To(BeTrue())
		Expect(results[1].Location.File).To(Equal(filepath.Join(dir, "p_test.rego")))
		Expect(results[1].Location.Row).To(Equal(5))
	})

	Context("with coverage", func() {
		BeforeEach(func() {
			writeFiles(dir, map[string]string{"p.rego": `package t.p

deny contains sprintf("over %v", [data.limit]) if input.n > data.limit

warn contains "odd" if {
	input.n % 2 == 1
}
`, "p_test.rego": `package t.p_test

import data.t.p

test_over if {
	p.deny == {"over 3"} with input as {"n": 4}
}
`})
		})

		It("ends the pretty report with each policy file's coverage and the lines no test reached", func() {
			passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{Coverage: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(passed).To(BeTrue(), out.String())
			Expect(out.String()).To(MatchRegexp(`(?m)^PASS: 1/1$`))
			Expect(out.String()).To(MatchRegexp(`(?m)^COVERAGE: \d+\.\d\d% \(\d+ of \d+ lines\)$`))
			Expect(out.String()).To(MatchRegexp(`(?m)^  ` + regexp.QuoteMeta(filepath.Join(dir, "p.rego")) + `: \d+\.\d\d% \(not covered: 5-6\)$`))
			Expect(out.String()).NotTo(ContainSubstring("p_test.rego"), "the tests' own coverage is not counted")
		})

		It("prints OPA's coverage report under --format json", func() {
			passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{Coverage: true, Format: policies.TestFormatJSON})
			Expect(err).NotTo(HaveOccurred())
			Expect(passed).To(BeTrue(), out.String())
			var report cover.Report
			Expect(json.Unmarshal(out.Bytes(), &report)).To(Succeed(), out.String())
			Expect(report.Files).To(HaveKey(filepath.Join(dir, "p.rego")))
			Expect(report.Files).To(HaveLen(1))
			Expect(report.Coverage).To(BeNumerically(">", 0))
			Expect(report.Coverage).To(BeNumerically("<", 100))
			Expect(report.Files[filepath.Join(dir, "p.rego")].IsCovered(3)).To(BeTrue())
			Expect(report.Files[filepath.Join(dir, "p.rego")].IsCovered(6)).To(BeFalse())
		})

		It("prints the results instead when a test fails", func() {
			writeFiles(dir, map[string]string{"q_test.rego": "package t.q_test\n\ntest_no if false\n"})
			passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{Coverage: true, Format: policies.TestFormatJSON})
			Expect(err).NotTo(HaveOccurred())
			Expect(passed).To(BeFalse())
			var results []*tester.Result
			Expect(json.Unmarshal(out.Bytes(), &results)).To(Succeed(), out.String())
			Expect(results).To(HaveLen(2))
			Expect(results[1].Name).To(Equal("test_no"))
			Expect(results[1].Fail).To(BeTrue())
		})
	})

	It("refuses an unknown format", func() {
		writeFiles(dir, map[string]string{"p_test.rego": "package t.p_test\n\ntest_a if true\n"})
		_, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{Format: "junit"})
		Expect(err).To(MatchError(ContainSubstring(`unknown test report format "junit"`)))
	})

	It("selects tests with Run", func() {
		writeFiles(dir, map[string]string{"p_test.rego": "package t.p_test\n\ntest_a if true\n\ntest_b if false\n"})
		passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{Run: "test_a$"})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeTrue(), out.String())
		Expect(out.String()).NotTo(ContainSubstring("test_b"))
	})

	It("compiles tests with the server's capabilities", func() {
		writeFiles(dir, map[string]string{"p_test.rego": "package t.p_test\n\ntest_net if {\n\thttp.send({\"method\": \"get\", \"url\": \"http://x\"})\n}\n"})
		_, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{})
		var le *policies.LoadError
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Problems[0].File).To(Equal(filepath.Join(dir, "p_test.rego")))
		Expect(le.Problems[0].Line).To(Equal(4))
		Expect(le.Problems[0].Message).To(ContainSubstring("http.send is not offered"))
	})

	It("offers an opted-in built-in only when asked to, as the server does", func() {
		writeFiles(dir, map[string]string{"p_test.rego": "package t.p_test\n\ntest_clock if time.now_ns() > 0\n"})
		_, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{})
		Expect(err).To(MatchError(ContainSubstring("time.now_ns is not deterministic or not bounded")))
		passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{AllowBuiltins: []string{"time.now_ns"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeTrue(), out.String())
	})

	It("fails when there is no test", func() {
		passed, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeFalse())
		Expect(out.String()).To(ContainSubstring("no tests found in " + dir))
	})

	It("refuses a directory with a syntax error", func() {
		writeFiles(dir, map[string]string{"p_test.rego": "package t.p_test\n\ntest_a if {\n"})
		_, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{})
		Expect(err).To(MatchError(ContainSubstring("p_test.rego")))
	})

	It("refuses a policy whose custom.match the server would refuse, as the server does", func() {
		writeFiles(dir, map[string]string{
			"p.rego":      matchPolicy("t.p", "operations: [DELETE]"),
			"p_test.rego": "package t.p_test\n\ntest_a if true\n",
		})
		_, err := policies.RunTests(context.Background(), dir, &out, policies.TestOptions{})
		Expect(err).To(MatchError(And(ContainSubstring("p.rego:"), ContainSubstring(`"DELETE" is not CREATE or UPDATE`))))
	})
})
