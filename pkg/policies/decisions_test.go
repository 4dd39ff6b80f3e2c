package policies

import (
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The decision cache's bounds", func() {
	q := &rego.PreparedEvalQuery{}
	input := func(i int) ast.Value { return ast.NewObject(ast.Item(ast.StringTerm("n"), ast.IntNumberTerm(i))) }

	It("keeps no more objects' bytes than its budget, however many shapes a tenant sends", func() {
		c := newDecisionCache(100000)
		for i := range 4 * decisionBytes / maxDecisionObject {
			c.put(q, input(i), &Result{}, maxDecisionObject)
			Expect(c.bytes).To(BeNumerically("<=", decisionBytes))
		}
		Expect(c.entries.Len()).To(Equal(decisionBytes / maxDecisionObject))
		_, ok := c.get(q, input(4*decisionBytes/maxDecisionObject-1))
		Expect(ok).To(BeTrue(), "the newest is kept")
		_, ok = c.get(q, input(0))
		Expect(ok).To(BeFalse(), "the oldest made room")
	})

	It("never keeps a large object's decision, nor a failure, and finds only an equal input", func() {
		c := newDecisionCache(10)
		c.put(q, input(1), &Result{}, maxDecisionObject+1)
		c.put(q, input(2), &Result{Failures: []Failure{{Code: reasonEvaluation}}}, 10)
		c.put(q, input(3), &Result{}, 10)
		for i, want := range map[int]bool{1: false, 2: false, 3: true, 4: false} {
			_, ok := c.get(q, input(i))
			Expect(ok).To(Equal(want), "input %d", i)
		}
		_, ok := c.get(&rego.PreparedEvalQuery{}, input(3))
		Expect(ok).To(BeFalse(), "another query's decision")
		_, ok = (*decisionCache)(nil).get(q, input(3))
		Expect(ok).To(BeFalse(), "no cache")
	})
})
