package main

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestLayerCheck(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Layer Check Suite")
}

var _ = Describe("the layer check", func() {
	It("passes a graph that only goes down", func() {
		layers := map[string]int{"pkg/leaf": 0, "pkg/mid": 1, "pkg/top": 2}
		Expect(check(layers, map[string][]string{"pkg/leaf": nil, "pkg/mid": {"pkg/leaf"}, "pkg/top": {"pkg/mid", "pkg/leaf"}})).To(BeEmpty())
	})

	It("fails an upward import, a sideways one and an unplaced package", func() {
		layers := map[string]int{"pkg/leaf": 0, "pkg/mid": 1, "pkg/mid2": 1, "pkg/top": 2}
		problems := check(layers, map[string][]string{"pkg/leaf": {"pkg/top"}, "pkg/mid": {"pkg/mid2"}, "pkg/new": nil})
		Expect(problems).To(ConsistOf(
			ContainSubstring("pkg/leaf (layer 0) imports pkg/top (layer 2)"),
			ContainSubstring("pkg/mid (layer 1) imports pkg/mid2 (layer 1)"),
			"pkg/new is not in the layer table"))
	})

	It("reads the table of docs/architecture.md", func() {
		f, err := os.Open("../../" + docFile)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		layers, err := parseLayers(f)
		Expect(err).NotTo(HaveOccurred())
		Expect(layers).To(HaveKeyWithValue("pkg/admission", 3))
		Expect(layers).To(HaveKeyWithValue("pkg/audit", 6))
		Expect(layers).To(HaveKeyWithValue("cmd/webhook", 8))
	})

	It("refuses a table that places a package twice", func() {
		_, err := parseLayers(strings.NewReader("<!-- layers -->\n| 0 | `pkg/a` | x |\n| 1 | `pkg/a` | y |\n<!-- /layers -->\n"))
		Expect(err).To(MatchError(ContainSubstring("pkg/a is in layers 0 and 1")))
	})
})
