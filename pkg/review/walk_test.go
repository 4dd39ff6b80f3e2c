package review_test

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("reading paths", func() {
	It("reads directories recursively, in order, skipping hidden directories and other files", func() {
		dir := GinkgoT().TempDir()
		write := func(rel, content string) {
			p := filepath.Join(dir, rel)
			Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
			Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
		}
		pod := func(name string) string { return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\n" }
		write("b/2.yml", pod("b2"))
		write("a.yaml", pod("a"))
		write("b/1.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b1"}}`)
		write(".git/x.yaml", pod("hidden"))
		write("README.md", "# not a manifest")
		ms, es := review.Read([]string{dir}, nil)
		Expect(es).To(BeEmpty())
		Expect(refs(ms)).To(Equal([]string{"Pod a @1:1", "Pod b1 @1:1", "Pod b2 @1:1"}))
	})

	It("reads standard input for -, once", func() {
		ms, es := review.Read([]string{"-", "-"}, strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"))
		Expect(refs(ms)).To(Equal([]string{"Pod p @1:1"}))
		Expect(ms[0].Source.File).To(Equal("<stdin>"))
		Expect(errs(es)).To(Equal([]string{`<stdin>: standard input ("-") given more than once`}))
	})

	It("reports paths that do not exist and directories without manifests", func() {
		empty := GinkgoT().TempDir()
		_, es := review.Read([]string{"does/not/exist.yaml", empty}, nil)
		Expect(errs(es)).To(Equal([]string{"does/not/exist.yaml: no such file or directory",
			empty + ": directory holds no .yaml, .yml or .json file"}))
	})

	It("refuses input larger than the limit instead of reading it all", func() {
		_, es := review.Read([]string{"-"}, endless{})
		Expect(errs(es)).To(Equal([]string{"<stdin>: larger than 32 MiB"}))
	})
})

// endless is a reader that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}
