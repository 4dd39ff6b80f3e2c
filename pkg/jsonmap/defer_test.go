package jsonmap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// deferredPaths are the paths the specs defer, as the webhook defers an
// AdmissionReview's objects' managedFields; shallowPaths are shallower than
// keys are unique, as the mutating path defers the objects whole.
var (
	deferredPaths = [][]string{{"r", "o", "m", "f"}, {"r", "old", "m", "f"}}
	shallowPaths  = [][]string{{"r", "o"}, {"r", "old"}}
)

// deferredAgree fails unless ObjectDeferring declines what ObjectUniqueTo
// declines, and its map with each deferred value decoded (Value) and put back
// is ObjectUniqueTo's. Inside a deferred value keys need not be unique: there
// ObjectDeferring may take what ObjectUniqueTo declines, and its map with the
// values put back is then Object's (a repeated key's last value).
func deferredAgree(data []byte, uniqueTo int, paths [][]string) error {
	want, wantOK := ObjectUniqueTo(data, uniqueTo)
	got, raw, ok := ObjectDeferring(data, uniqueTo, paths)
	if ok && !wantOK && slices.ContainsFunc(paths, func(p []string) bool { return len(p) < uniqueTo }) {
		want, wantOK = Object(data)
	}
	if ok != wantOK {
		return fmt.Errorf("deferring decodes %q: %t, ObjectUniqueTo: %t", data, ok, wantOK)
	}
	if !ok {
		return nil
	}
	for i, p := range paths {
		if raw[i].JSON == nil {
			continue
		}
		v, ok := Value(raw[i].JSON)
		if !ok {
			return fmt.Errorf("deferred %q of %q does not decode", raw[i].JSON, data)
		}
		if depth, values := writtenShape(raw[i].JSON); depth != raw[i].Depth || values != raw[i].Values {
			return fmt.Errorf("deferred %q of %q: depth %d and %d values, counted %d and %d",
				raw[i].JSON, data, depth, values, raw[i].Depth, raw[i].Values)
		}
		m := got
		for _, k := range p[:len(p)-1] {
			m = m[k].(map[string]any)
		}
		if _, decoded := m[p[len(p)-1]]; decoded {
			return fmt.Errorf("%q: deferred %v is in the map too", data, p)
		}
		m[p[len(p)-1]] = v
	}
	// cmp.Diff only to report: it takes minutes over a thousand nested arrays.
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("%q decoded otherwise (-ObjectUniqueTo +deferred and put back):\n%s", data, cmp.Diff(want, got))
	}
	return nil
}

// writtenShape is how many levels the JSON value in data has and how many
// values it holds, itself included, as written: a key repeated in an object
// counts each time.
func writtenShape(data []byte) (depth, values int) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type level struct{ object, atKey bool }
	var stack []level
	for {
		t, err := dec.Token()
		if err != nil {
			return depth, values
		}
		if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			if stack[n-1].atKey = !stack[n-1].atKey; stack[n-1].atKey {
				continue // a key
			}
		}
		values++
		depth = max(depth, len(stack)+1)
		if d, ok := t.(json.Delim); ok {
			stack = append(stack, level{object: d == '{'})
		}
	}
}

// expectKept expects ObjectDeferring to decode data or not, keeping the
// deferred values' bytes as written.
func expectKept(data string, paths [][]string, decodes bool, deferred []string) {
	GinkgoHelper()
	_, raw, ok := ObjectDeferring([]byte(data), 4, paths)
	Expect(ok).To(Equal(decodes))
	if !ok {
		return
	}
	kept := []string{}
	for _, r := range raw {
		if r.JSON != nil {
			kept = append(kept, string(r.JSON))
		}
	}
	Expect(kept).To(ConsistOf(deferred))
}

var _ = DescribeTable("deferring values: the same map once they are put back, declining what Object declines",
	func(data string, decodes bool, deferred ...string) {
		Expect(deferredAgree([]byte(data), 4, deferredPaths)).To(Succeed())
		Expect(deferredAgree([]byte(data), 4, shallowPaths)).To(Succeed())
		expectKept(data, deferredPaths, decodes, deferred)
	},
	Entry("both objects' values", `{"r":{"o":{"m":{"a":1,"f":[{"x":{"k:{\"name\":\"a\"}":{}}}]}},"old":{"m":{"f":null}}}}`, true,
		`[{"x":{"k:{\"name\":\"a\"}":{}}}]`, `null`),
	Entry("none", `{"r":{"o":{"m":{"a":1}}}}`, true),
	Entry("a value of every kind, with whitespace", `{"r":{"o":{"m":{"f": [ 1 , -2.5e3, "s", true, false, null, {}, [], {"a":[{}]} ] }}}}`, true,
		`[ 1 , -2.5e3, "s", true, false, null, {}, [], {"a":[{}]} ]`),
	Entry("escapes, a \\u escape, invalid UTF-8", "{\"r\":{\"o\":{\"m\":{\"f\":[\"a\\\"\\n\\u00e9\\ud800\",\"\xff\"]}}}}", true,
		"[\"a\\\"\\n\\u00e9\\ud800\",\"\xff\"]"),
	Entry("a repeated key inside: the last, as a map keeps it", `{"r":{"o":{"m":{"f":{"a":1,"a":2}}}}}`, true, `{"a":1,"a":2}`),
	Entry("the same path under an array is not deferred", `{"r":[{"o":{"m":{"f":1}}}]}`, true),
	Entry("a deeper path is not deferred", `{"r":{"o":{"m":{"x":{"f":1}}}}}`, true),
	Entry("a repeated deferred key", `{"r":{"o":{"m":{"f":1,"f":2}}}}`, false),
	Entry("a repeated parent", `{"r":{"o":{"m":{"f":1}},"o":{"m":{}}}}`, false),
	Entry("a number too large", `{"r":{"o":{"m":{"f":[1e999]}}}}`, false),
	Entry("a control character", "{\"r\":{\"o\":{\"m\":{\"f\":[\"a\nb\"]}}}}", false),
	Entry("a bad escape", `{"r":{"o":{"m":{"f":["\x"]}}}}`, false),
	Entry("a bad \\u escape", `{"r":{"o":{"m":{"f":["\u12"]}}}}`, false),
	Entry("a trailing comma in an array", `{"r":{"o":{"m":{"f":[1,]}}}}`, false),
	Entry("a trailing comma in an object", `{"r":{"o":{"m":{"f":{"a":1,}}}}}`, false),
	Entry("a missing comma", `{"r":{"o":{"m":{"f":[1 2]}}}}`, false),
	Entry("a key that is not a string", `{"r":{"o":{"m":{"f":{a:1}}}}}`, false),
	Entry("a missing colon", `{"r":{"o":{"m":{"f":{"a" 1}}}}}`, false),
	Entry("unterminated", `{"r":{"o":{"m":{"f":["a`, false),
	Entry("an empty value", `{"r":{"o":{"m":{"f":}}}}`, false),
	Entry("data after the object", `{"r":{"o":{"m":{"f":[]}}}} x`, false),
)

var _ = It("defers nesting no deeper than the decoder's bound", func() {
	for _, depth := range []int{maxDepth - 5, maxDepth - 4, maxDepth} {
		data := `{"r":{"o":{"m":{"f":` + nested(depth) + `}}}}`
		Expect(deferredAgree([]byte(data), 4, deferredPaths)).To(Succeed(), "depth %d", depth)
		Expect(deferredAgree([]byte(data), 4, shallowPaths)).To(Succeed(), "depth %d", depth)
	}
	_, _, ok := ObjectDeferring([]byte(`{"r":{"o":{"m":{"f":`+nested(maxDepth-4)+`}}}}`), 4, deferredPaths)
	Expect(ok).To(BeTrue())
	_, _, ok = ObjectDeferring([]byte(`{"r":{"o":{"m":{"f":`+nested(maxDepth-3)+`}}}}`), 4, deferredPaths)
	Expect(ok).To(BeFalse())
})

// nested is n arrays, one in the other.
func nested(n int) string {
	s := ""
	for range n {
		s = "[" + s + "]"
	}
	return s
}

var _ = It("refuses a path deeper than keys are unique, or empty", func() {
	Expect(func() { ObjectDeferring([]byte(`{}`), 3, deferredPaths) }).To(Panic())
	Expect(func() { ObjectDeferring([]byte(`{}`), 4, [][]string{{}}) }).To(Panic())
	Expect(func() { ObjectDeferring([]byte(`{}`), 5, deferredPaths) }).NotTo(Panic())
})

var _ = DescribeTable("deferring a value shallower than keys are unique",
	func(data string, decodes bool, deferred ...string) {
		Expect(deferredAgree([]byte(data), 4, shallowPaths)).To(Succeed())
		expectKept(data, shallowPaths, decodes, deferred)
	},
	Entry("both, kept as written", `{"r":{"o":{"m":{"f":[1]}},"old":null,"u":{"n":{"a":1}}}}`, true, `{"m":{"f":[1]}}`, `null`),
	Entry("keys inside need not be unique", `{"r":{"o":{"m":1,"m":2}}}`, true, `{"m":1,"m":2}`),
	Entry("keys beside it must be", `{"r":{"o":{},"u":{"n":1,"n":2}}}`, false),
	Entry("a repeated deferred key", `{"r":{"o":{},"o":{}}}`, false),
	Entry("what does not decode inside", `{"r":{"o":{"m":[1,]}}}`, false),
)

// FuzzDecodeDeferring holds ObjectDeferring to ObjectUniqueTo on any bytes.
func FuzzDecodeDeferring(f *testing.F) {
	f.Add([]byte(`{"r":{"o":{"m":{"a":1,"f":[{"x":{"k:{\"name\":\"a\"}":{}}}]}},"old":{"m":{"f":"\u00e9"}}}}`))
	f.Add([]byte(`{"r":{"o":{"m":{"f":{"a":{"b":1,"b":2}}}}}}`))
	f.Add([]byte(`{"r":{"o":{"m":1,"m":2},"u":{"n":{"a":1}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, paths := range [][][]string{deferredPaths, shallowPaths} {
			if err := deferredAgree(data, 4, paths); err != nil {
				t.Fatal(err)
			}
		}
	})
}
