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
	put := func(c *decisionCache, v ast.Value, res *Result, size int) {
		_, key, _ := c.get(q, v)
		c.put(key, v, res, size)
	}
	found := func(c *decisionCache, q *rego.PreparedEvalQuery, v ast.Value) bool {
		_, _, ok := c.get(q, v)
		return ok
	}

	It("keeps no more objects' bytes than its budget, however many shapes a tenant sends", func() {
		c := newDecisionCache(100000)
		for i := range 4 * decisionBytes / maxDecisionObject {
			put(c, input(i), &Result{}, maxDecisionObject)
			Expect(c.bytes).To(BeNumerically("<=", decisionBytes))
		}
		Expect(c.entries.Len()).To(Equal(decisionBytes / maxDecisionObject))
		Expect(found(c, q, input(4*decisionBytes/maxDecisionObject-1))).To(BeTrue(), "the newest is kept")
		Expect(found(c, q, input(0))).To(BeFalse(), "the oldest made room")
	})

	It("never keeps a large object's decision, nor a failure, and finds only an equal input", func() {
		c := newDecisionCache(10)
		put(c, input(1), &Result{}, maxDecisionObject+1)
		put(c, input(2), &Result{Failures: []Failure{{Code: reasonEvaluation}}}, 10)
		put(c, input(3), &Result{}, 10)
		for i, want := range map[int]bool{1: false, 2: false, 3: true, 4: false} {
			Expect(found(c, q, input(i))).To(Equal(want), "input %d", i)
		}
		Expect(found(c, &rego.PreparedEvalQuery{}, input(3))).To(BeFalse(), "another query's decision")
		Expect(found(nil, q, input(3))).To(BeFalse(), "no cache")
	})

	// OPA's own hash of a number is its integer part: inputs that differ in
	// a fractional request all shared one bucket, which every lookup then
	// compared whole.
	It("gives inputs that differ only in a fraction their own buckets, and bounds a bucket", func() {
		c := newDecisionCache(100000)
		cpus := func(milli int) ast.Value {
			return ast.NewObject(ast.Item(ast.StringTerm("cpu"), ast.FloatNumberTerm(4+float64(milli)/1000)))
		}
		for m := range 1000 {
			put(c, cpus(m), &Result{}, 10)
		}
		Expect(c.entries.Len()).To(Equal(1000))
		for m := range 1000 {
			Expect(found(c, q, cpus(m))).To(BeTrue())
		}
		// Colliding inputs (one key for all, as a tenant aiming at a weak
		// hash would make) keep the newest few.
		key := decisionKey{query: q, hash: 42}
		for i := range 3 * maxBucket {
			c.put(key, input(i), &Result{}, 10)
		}
		bucket, _ := c.entries.Peek(key)
		Expect(bucket).To(HaveLen(maxBucket))
		Expect(bucket[maxBucket-1].input.Compare(input(3*maxBucket - 1))).To(Equal(0))
	})
})

var _ = DescribeTable("valueHash is equal for values that compare equal",
	func(a, b string, equal bool) {
		x, y := ast.MustParseTerm(a).Value, ast.MustParseTerm(b).Value
		if equal {
			Expect(x.Compare(y)).To(BeZero(), "the table's premise")
			Expect(valueHash(x)).To(Equal(valueHash(y)))
			return
		}
		Expect(x.Compare(y)).NotTo(BeZero(), "the table's premise")
		Expect(valueHash(x)).NotTo(Equal(valueHash(y)))
	},
	Entry("an object in another key order", `{"a": 1, "b": [true, null]}`, `{"b": [true, null], "a": 1}`, true),
	Entry("one number spelled two ways", `{"n": 1}`, `{"n": 1.0}`, true),
	Entry("zero and minus zero", `0`, `-0`, true),
	Entry("a set in another order", `{"x", "y"}`, `{"y", "x"}`, true),
	Entry("fractions of one integer part", `{"cpu": 4.25}`, `{"cpu": 4.5}`, false),
	Entry("a string for a number", `{"n": "1"}`, `{"n": 1}`, false),
	Entry("an array in another order", `[1, 2]`, `[2, 1]`, false),
	Entry("a key moved to a value", `{"a": "b"}`, `{"b": "a"}`, false),
	Entry("nested", `{"a": {"b": {"c": [1, {"d": 2}]}}}`, `{"a": {"b": {"c": [1, {"d": 3}]}}}`, false),
)
