package policies_test

import (
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Decoding policy results", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("uses the title when a message is empty", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.titled", "deny", `deny contains "" if true`)})
		d := validate(loadedEngine(dir), createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		Expect(d.Violations[0].Message).To(Equal("t.titled policy"))
	})

	It("reports a malformed result as a failure of its policy", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.odd", "", `deny contains 42 if true`)})
		d := validate(loadedEngine(dir), createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		Expect(d.Denials()).To(HaveLen(1))
		Expect(d.Denials()[0].Message).To(ContainSubstring("deny results must be strings or objects with msg, got number 42"))
	})
})
