package policies_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kueue-guard/kueue-guard/pkg/policies"
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

	It("runs the tests with the data files and reports each in opa test style", func() {
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
		Expect(out.String()).To(MatchRegexp(`(?m)^data\.t\.p_test\.test_over: PASS \(.+\)$`))
		Expect(out.String()).To(MatchRegexp(`(?m)^data\.t\.p_test\.test_under: PASS \(.+\)$`))
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
		Expect(out.String()).To(ContainSubstring(test + ":9: data.t.p_test.test_fails: FAIL ("))
		Expect(out.String()).To(ContainSubstring("  failed at " + test + `:11: p.deny == {"over 4"} with input as {"n": 4}`))
		Expect(out.String()).To(ContainSubstring("  | debugging"))
		Expect(out.String()).To(ContainSubstring(test + ":14: data.t.p_test.test_errors: ERROR ("))
		Expect(out.String()).To(ContainSubstring("eval_builtin_error: to_number"))
		Expect(out.String()).To(MatchRegexp(`(?m)^PASS: 1/3$`))
		Expect(out.String()).To(MatchRegexp(`(?m)^FAIL: 1/3$`))
		Expect(out.String()).To(MatchRegexp(`(?m)^ERROR: 1/3$`))
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
		Expect(le.Problems[0].Message).To(ContainSubstring("http.send is disabled"))
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
})
