package review_test

import (
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("reading manifests", func() {
	It("reads multi-document YAML with each object's document index and line", func() {
		ms, es := review.Parse("jobs.yaml", []byte(`# leading comment
apiVersion: batch/v1
kind: Job
metadata: {name: a}
---
---   # an empty document with a comment

apiVersion: batch/v1
kind: Job
metadata:
  name: b
...
---
apiVersion: v1
kind: Pod
metadata: {name: c}
`))
		Expect(es).To(BeEmpty())
		Expect(refs(ms)).To(Equal([]string{"Job a @1:2", "Job b @3:8", "Pod c @4:14"}))
	})

	It("reads helm template output: Source comments, empty documents, and # lines inside block scalars", func() {
		data, err := os.ReadFile("../../test/review/testdata/corpus/helm/rendered.yaml")
		Expect(err).NotTo(HaveOccurred())
		ms, es := review.Parse("rendered.yaml", data)
		Expect(es).To(BeEmpty())
		Expect(refs(ms)).To(Equal([]string{"ServiceAccount batch-app @2:3", "ConfigMap batch-app-config @3:12",
			"Job batch-app-nightly @5:25"}))
		script, _, _ := unstructured.NestedString(ms[1].Object.Object, "data", "run.sh")
		Expect(script).To(ContainSubstring("# not a YAML comment: part of the script"))
	})

	It("reads JSON objects, JSON streams, and the items of List documents", func() {
		ms, es := review.Parse("stream.json", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"}}
{"apiVersion":"v1",
 "kind":"Pod","metadata":{"name":"p2"}}
`))
		Expect(es).To(BeEmpty())
		Expect(refs(ms)).To(Equal([]string{"Pod p1 @1:1", "Pod p2 @2:2"}))

		ms, es = review.Parse("list.yaml", []byte(`apiVersion: v1
kind: JobList
items:
- apiVersion: batch/v1
  kind: Job
  metadata: {name: j1}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: j2}
`))
		Expect(es).To(BeEmpty())
		Expect(refs(ms)).To(Equal([]string{"Job j1 @1:4 items[0]", "Job j2 @1:7 items[1]"}))
	})

	DescribeTable("names the file, the document and the line of what it cannot read",
		func(data, want string) {
			ms, es := review.Parse("bad.yaml", []byte(data))
			Expect(ms).To(BeEmpty())
			Expect(errs(es)).To(Equal([]string{want}))
		},
		Entry("no kind", "apiVersion: v1\nmetadata: {name: x}\n", "bad.yaml: document 1, line 1: object has no kind"),
		Entry("no apiVersion", "kind: Pod\nmetadata: {name: x}\n", "bad.yaml: document 1, line 1: object has no apiVersion"),
		Entry("kind of the wrong type", "apiVersion: v1\nkind: [Pod]\n", "bad.yaml: document 1, line 1: kind must be a non-empty string"),
		Entry("no name", "apiVersion: v1\nkind: Pod\n", "bad.yaml: document 1, line 1: Pod has no metadata.name"),
		Entry("metadata of the wrong type", "apiVersion: v1\nkind: Pod\nmetadata: x\n", "bad.yaml: document 1, line 1: metadata must be an object"),
		Entry("a list document", "- a\n- b\n", "bad.yaml: document 1, line 1: a document must be an object with apiVersion and kind, not a list; use kind: List with items"),
		Entry("a scalar document", "\n\nhello\n", "bad.yaml: document 1, line 3: a document must be an object with apiVersion and kind, not a string"),
		Entry("truncated JSON", "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n", "bad.yaml: document 1, line 3: invalid JSON: unexpected EOF"),
		Entry("a List item that is not an object", "apiVersion: v1\nkind: List\nitems:\n- 3\n", "bad.yaml: document 1, line 4: items[0] must be an object, not a number"),
	)

	It("reports a YAML syntax error at its line in the file and keeps the other documents", func() {
		ms, es := review.Parse("bad.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   namespace: y\n"))
		Expect(refs(ms)).To(Equal([]string{"Pod ok @1:1"}))
		Expect(es).To(HaveLen(1))
		Expect(es[0].Document).To(Equal(2))
		Expect(es[0].Line).To(Equal(9))
		Expect(es[0].Message).To(HavePrefix("invalid YAML: "))
	})
})
