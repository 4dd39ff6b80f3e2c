package policies

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The decision cache's bounds", func() {
	q := &rego.PreparedEvalQuery{}
	input := func(i int) ast.Value { return ast.NewObject(ast.Item(ast.StringTerm("n"), ast.IntNumberTerm(i))) }
	// padded is input i with a string of n bytes beside.
	padded := func(i, n int) ast.Value {
		return ast.NewObject(ast.Item(ast.StringTerm("n"), ast.IntNumberTerm(i)),
			ast.Item(ast.StringTerm("pad"), ast.StringTerm(strings.Repeat("x", n))))
	}
	put := func(c *decisionCache, v ast.Value, res *Result) {
		_, l, _ := c.get(q, v)
		defer l.release()
		c.put(l, res)
	}
	found := func(c *decisionCache, q *rego.PreparedEvalQuery, v ast.Value) bool {
		_, l, ok := c.get(q, v)
		l.release()
		return ok
	}

	It("keeps no more bytes than its budget, however many shapes a tenant sends", func() {
		c := newDecisionCache(100000)
		const pad = maxDecisionKey - 100
		n := 4 * decisionBytes / pad
		for i := range n {
			put(c, padded(i, pad), &Result{})
			Expect(c.bytes).To(BeNumerically("<=", decisionBytes))
		}
		Expect(c.entries.Len()).To(BeNumerically("~", decisionBytes/pad, 1))
		Expect(found(c, q, padded(n-1, pad))).To(BeTrue(), "the newest is kept")
		Expect(found(c, q, padded(0, pad))).To(BeFalse(), "the oldest made room")
		c.entries.Purge()
		Expect(c.bytes).To(BeZero(), "every entry's bytes leave with it")
	})

	It("never keeps a large input's decision, nor a failure, and finds only an equal input", func() {
		c := newDecisionCache(10)
		put(c, padded(1, maxDecisionKey), &Result{})
		put(c, input(2), &Result{Failures: []Failure{{Code: reasonEvaluation}}})
		put(c, input(3), &Result{})
		for i, want := range map[int]bool{2: false, 3: true, 4: false} {
			Expect(found(c, q, input(i))).To(Equal(want), "input %d", i)
		}
		Expect(found(c, q, padded(1, maxDecisionKey))).To(BeFalse(), "a large input")
		Expect(found(c, &rego.PreparedEvalQuery{}, input(3))).To(BeFalse(), "another query's decision")
		Expect(found(nil, q, input(3))).To(BeFalse(), "no cache")
		Expect(found(c, q, ast.NewObject(ast.Item(ast.StringTerm("n"), ast.VarTerm("x"))))).To(BeFalse(),
			"a value no input holds")
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
			put(c, cpus(m), &Result{})
		}
		Expect(c.entries.Len()).To(Equal(1000))
		for m := range 1000 {
			Expect(found(c, q, cpus(m))).To(BeTrue())
		}
		// Colliding inputs (one key for all, as a tenant aiming at a weak
		// hash would make) keep the newest few.
		key := decisionKey{query: q, hash: 42}
		for i := range 3 * maxBucket {
			enc, ok := encodeValue(input(i))
			Expect(ok).To(BeTrue())
			c.put(lookup{key: key, enc: enc}, &Result{})
		}
		bucket, _ := c.entries.Peek(key)
		Expect(bucket).To(HaveLen(maxBucket))
		last, _ := encodeValue(input(3*maxBucket - 1))
		Expect(bucket[maxBucket-1].input).To(Equal(last.buf))
	})
})

// The key must tell apart any two values that compare unequal (a shared key
// would be a wrong decision); values that compare equal may share it.
var _ = DescribeTable("valueKey is one value's alone",
	func(a, b string, same bool) {
		x, y := ast.MustParseTerm(a).Value, ast.MustParseTerm(b).Value
		kx, okx := encodeValue(x)
		ky, oky := encodeValue(y)
		defer putValueKey(kx)
		defer putValueKey(ky)
		Expect(okx && oky).To(BeTrue())
		if same {
			Expect(x.Compare(y)).To(BeZero(), "the table's premise")
			Expect(kx.buf).To(Equal(ky.buf))
			Expect(kx.hash()).To(Equal(ky.hash()))
			return
		}
		Expect(kx.buf).NotTo(Equal(ky.buf))
	},
	Entry("an object in another key order", `{"a": 1, "b": [true, null]}`, `{"b": [true, null], "a": 1}`, true),
	Entry("a set in another order", `{"x", "y"}`, `{"y", "x"}`, true),
	Entry("one number spelled two ways: a miss, not a wrong hit", `{"n": 1}`, `{"n": 1.0}`, false),
	Entry("fractions of one integer part", `{"cpu": 4.25}`, `{"cpu": 4.5}`, false),
	Entry("a string for a number", `{"n": "1"}`, `{"n": 1}`, false),
	Entry("a string for a boolean", `{"b": "true"}`, `{"b": true}`, false),
	Entry("an array in another order", `[1, 2]`, `[2, 1]`, false),
	Entry("a key moved to a value", `{"a": "b"}`, `{"b": "a"}`, false),
	Entry("a string's end moved into the next", `["ab", "c"]`, `["a", "bc"]`, false),
	Entry("an element moved out of a nested array", `[[1, 2], 3]`, `[[1], 2, 3]`, false),
	Entry("an empty object for an empty set", `{}`, `set()`, false),
	Entry("an empty array for an empty object", `[]`, `{}`, false),
	Entry("null for false", `[null]`, `[false]`, false),
	Entry("nested", `{"a": {"b": {"c": [1, {"d": 2}]}}}`, `{"a": {"b": {"c": [1, {"d": 3}]}}}`, false),
)
