package review_test

import (
	"testing"

	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// FuzzParse checks that no input makes the reader panic, and that every error
// names the file. The seeds run with every `go test`.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "---", "---\n---\n", "{", "[1,2]", "null", "- a", "apiVersion: v1\nkind: List\nitems: 5\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n--- {a: b}\n...\nkind: x\n",
		"\xef\xbb\xbfapiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "a: &a [*a]\n", "{\"kind\": 1}{\"kind\": \"Pod\"}",
		"metadata:\n  name: x\nkind: Pod\napiVersion: v1\nspec: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, errs := review.Parse("fuzz.yaml", data)
		for _, e := range errs {
			if e.File != "fuzz.yaml" || e.Message == "" {
				t.Fatalf("error without file or message: %+v", e)
			}
		}
		for _, m := range ms {
			if m.Object.GetKind() == "" || m.Source.Document < 1 || m.Source.Line < 1 {
				t.Fatalf("object without kind or source: %+v", m.Source)
			}
			_ = m.Line(fieldpath.Parse("spec.template.spec.containers[0].resources"))
			_ = m.Line(fieldpath.Parse(`metadata.labels["kueue.x-k8s.io/queue-name"]`))
		}
	})
}
