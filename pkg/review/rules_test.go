package review_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
)

var _ = Describe("the reviewer's lists agree with the pipeline's", func() {
	It("describes every rule constant of the admission package", func() {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, "../admission", func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		Expect(err).NotTo(HaveOccurred())
		var found []string
		for _, p := range pkgs {
			for _, f := range p.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					vs, ok := n.(*ast.ValueSpec)
					if !ok {
						return true
					}
					for i, name := range vs.Names {
						if strings.HasPrefix(name.Name, "Rule") && i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
								v, _ := strconv.Unquote(lit.Value)
								found = append(found, v)
							}
						}
					}
					return true
				})
			}
		}
		Expect(found).To(HaveLen(13), "the test no longer finds the rule constants")
		for _, rule := range found {
			Expect(review.BuiltinRules).To(HaveKey(rule))
			Expect(review.BuiltinRules[rule].Title).NotTo(BeEmpty())
		}
	})

	It("checks exactly the kinds the controller webhook is registered for, plus webhook configurations", func() {
		resources := map[string]bool{}
		for _, r := range webhookconfig.ControllerRules() {
			for _, res := range r.Resources {
				resources[r.APIGroups[0]+"/"+res] = true
			}
		}
		got := map[string]bool{}
		for gk := range review.ControllerKinds {
			if strings.HasSuffix(gk.Kind, "WebhookConfiguration") {
				continue
			}
			plural, _ := meta.UnsafeGuessKindToResource(gk.WithVersion("v1"))
			got[gk.Group+"/"+plural.Resource] = true
		}
		Expect(got).To(Equal(resources))
	})
})
