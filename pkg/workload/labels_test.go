package workload_test

import (
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// OwnLabel reads in place what Labels copies: the two agree on every shape.
var _ = DescribeTable("OwnLabel is Labels(obj)[key], without the copy",
	func(kind string, obj map[string]any, want string) {
		in, ok := integrations.Lookup(schema.GroupKind{Group: "batch", Kind: kind})
		Expect(ok).To(BeTrue())
		u := &unstructured.Unstructured{Object: obj}
		got := workload.OwnLabel(u, in, integrations.QueueNameLabel)
		Expect(cmp.Diff(want, got)).To(BeEmpty())
		Expect(cmp.Diff(workload.Labels(u, in)[integrations.QueueNameLabel], got)).To(BeEmpty())
	},
	Entry("the object's label", "Job", map[string]any{"metadata": map[string]any{
		"labels": map[string]any{integrations.QueueNameLabel: "q", "team": "a"}}}, "q"),
	Entry("another label only", "Job", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}}}, ""),
	Entry("no labels", "Job", map[string]any{"metadata": map[string]any{}}, ""),
	Entry("no metadata", "Job", map[string]any{}, ""),
	Entry("metadata not an object", "Job", map[string]any{"metadata": "x"}, ""),
	Entry("labels not an object", "Job", map[string]any{"metadata": map[string]any{"labels": []any{"q"}}}, ""),
	Entry("a value that is not a string makes the map malformed", "Job", map[string]any{"metadata": map[string]any{
		"labels": map[string]any{integrations.QueueNameLabel: "q", "n": int64(1)}}}, ""),
	Entry("the queue label itself not a string", "Job", map[string]any{"metadata": map[string]any{
		"labels": map[string]any{integrations.QueueNameLabel: true}}}, ""),
	Entry("a CronJob's job template", "CronJob", map[string]any{
		"metadata": map[string]any{"labels": map[string]any{integrations.QueueNameLabel: "outer"}},
		"spec": map[string]any{"jobTemplate": map[string]any{"metadata": map[string]any{
			"labels": map[string]any{integrations.QueueNameLabel: "inner"}}}}}, "inner"),
)

// PeekOwnLabels reads the labels at the kind's queue-label place from JSON, or
// asks for the full decode: it never reads labels the full decode would not.
var _ = DescribeTable("peeking at an object's own labels",
	func(kind, raw string, want map[string]string, peeks bool) {
		in, ok := integrations.Lookup(schema.GroupKind{Group: "batch", Kind: kind})
		Expect(ok).To(BeTrue())
		got, err := workload.PeekOwnLabels([]byte(raw), in)
		if !peeks {
			Expect(err).To(HaveOccurred())
			return
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(cmp.Diff(want, got)).To(BeEmpty())
		u := &unstructured.Unstructured{}
		Expect(u.UnmarshalJSON([]byte(raw))).To(Succeed())
		Expect(cmp.Diff(workload.Labels(u, in), got)).To(BeEmpty(), "as the full decode reads them")
	},
	Entry("a Job's", "Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"labels":{"kueue.x-k8s.io/queue-name":"q"}},"spec":{}}`,
		map[string]string{integrations.QueueNameLabel: "q"}, true),
	Entry("a CronJob's job template's, not its own", "CronJob", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"labels":{"a":"1"}},`+
		`"spec":{"jobTemplate":{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":"q"}}}}}`, map[string]string{integrations.QueueNameLabel: "q"}, true),
	Entry("none", "Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"}}`, nil, true),
	Entry("a label that is not a string", "Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"labels":{"a":1}}}`, nil, false),
	Entry("labels that are not an object", "Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"labels":"a"}}`, nil, false),
	Entry("metadata repeated", "Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"labels":{"a":"1"}},"metadata":{}}`, nil, false),
	Entry("not JSON past the labels", "Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"labels":{}},"spec":{`, nil, false),
)
