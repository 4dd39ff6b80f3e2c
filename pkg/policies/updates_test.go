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

var _ = Describe("equalOutsideSpec", func() {
	object := func() map[string]any {
		return map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "j", "namespace": "ml", "labels": map[string]any{"a": "b"},
				"resourceVersion": "1", "generation": int64(1),
				"managedFields": []any{map[string]any{"manager": "kubectl"}}},
			"spec":   map[string]any{"parallelism": int64(2)},
			"status": map[string]any{"active": int64(1)}}
	}
	DescribeTable("an update's summary is the old one's only when nothing it may read changed",
		func(edit func(map[string]any), want bool) {
			a, b := object(), object()
			edit(b)
			Expect(equalOutsideSpec(a, b)).To(Equal(want))
			Expect(equalOutsideSpec(b, a)).To(Equal(want))
		},
		Entry("equal", func(map[string]any) {}, true),
		Entry("spec (compared apart)", func(m map[string]any) { m["spec"] = nil }, true),
		Entry("what the API server writes", func(m map[string]any) {
			md := m["metadata"].(map[string]any)
			md["resourceVersion"], md["generation"], md["managedFields"] = "2", int64(2), []any{}
			delete(m["metadata"].(map[string]any), "managedFields")
		}, true),
		Entry("a label", func(m map[string]any) { m["metadata"].(map[string]any)["labels"] = map[string]any{"a": "c"} }, false),
		Entry("an annotation added", func(m map[string]any) {
			m["metadata"].(map[string]any)["annotations"] = map[string]any{"kueue.x-k8s.io/job-min-parallelism": "1"}
		}, false),
		Entry("an owner", func(m map[string]any) { m["metadata"].(map[string]any)["ownerReferences"] = []any{} }, false),
		Entry("the name", func(m map[string]any) { m["metadata"].(map[string]any)["name"] = "k" }, false),
		Entry("status", func(m map[string]any) { m["status"] = map[string]any{} }, false),
		Entry("a key removed", func(m map[string]any) { delete(m, "kind") }, false),
		Entry("metadata that is not a map", func(m map[string]any) { m["metadata"] = "x" }, false),
		Entry("no metadata", func(m map[string]any) { delete(m, "metadata") }, false),
	)
})
