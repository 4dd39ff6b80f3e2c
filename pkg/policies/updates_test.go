package policies

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("jsonEqual", func() {
	spec := func() map[string]any {
		return map[string]any{"parallelism": int64(2), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "main", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}},
			"suspend":    true, "ratio": 0.5, "none": nil,
		}}}
	}
	DescribeTable("compares decoded JSON as reflect.DeepEqual does",
		func(edit func(map[string]any), want bool) {
			a, b := spec(), spec()
			edit(b)
			Expect(jsonEqual(a, b)).To(Equal(want))
			Expect(jsonEqual(b, a)).To(Equal(want))
		},
		Entry("equal", func(map[string]any) {}, true),
		Entry("a number", func(m map[string]any) { m["parallelism"] = int64(3) }, false),
		Entry("an int64 and a float64 of one value", func(m map[string]any) { m["parallelism"] = 2.0 }, false),
		Entry("a key added", func(m map[string]any) { m["completions"] = int64(2) }, false),
		Entry("a null for a missing key", func(m map[string]any) { delete(m, "parallelism"); m["other"] = nil }, false),
		Entry("deep in a list", func(m map[string]any) {
			m["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["name"] = "side"
		}, false),
		Entry("a list for a map", func(m map[string]any) { m["template"] = []any{} }, false),
		Entry("a boolean", func(m map[string]any) { m["template"].(map[string]any)["spec"].(map[string]any)["suspend"] = false }, false),
	)
})
