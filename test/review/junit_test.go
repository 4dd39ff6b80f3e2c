package review

import (
	"encoding/json"
	"encoding/xml"

	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the JUnit output", func() {
	It("parses back into the same verdicts as the JSON report", func() {
		_, xmlOut, _ := runCLI("", with(corpusArgs, "-o", "junit"))
		_, jsonOut, _ := runCLI("", with(corpusArgs, "-o", "json"))
		var suites review.JUnitTestSuites
		Expect(xml.Unmarshal(xmlOut, &suites)).To(Succeed())
		var rep review.Report
		Expect(json.Unmarshal(jsonOut, &rep)).To(Succeed())

		Expect(suites.Tests).To(Equal(rep.Summary.Objects + rep.Summary.InputErrors))
		Expect(suites.Failures).To(Equal(rep.Summary.Denied))
		Expect(suites.Skipped).To(Equal(rep.Summary.Skipped))
		Expect(suites.Errors).To(Equal(rep.Summary.Errors + rep.Summary.InputErrors))
		Expect(suites.Suites).To(HaveLen(rep.Summary.Files))

		failed := map[string]bool{}
		total := 0
		for _, s := range suites.Suites {
			total += s.Tests
			for _, c := range s.Cases {
				Expect(c.Classname).To(Equal(s.Name))
				if c.Failure != nil {
					failed[s.Name+" "+c.Name] = true
					Expect(c.Failure.Text).To(ContainSubstring("["))
				}
			}
		}
		Expect(total).To(Equal(suites.Tests))
		for _, o := range rep.Objects {
			Expect(failed[o.Source.File+" "+o.Ref()]).To(Equal(o.Status == review.StatusDenied), o.Ref())
		}
	})

	It("turns unreadable documents into errors that name the document", func() {
		_, out, _ := runCLI("", []string{"-f", "testdata/invalid", "-o", "junit"})
		var suites review.JUnitTestSuites
		Expect(xml.Unmarshal(out, &suites)).To(Succeed())
		Expect(suites.Errors).To(Equal(4))
		var names []string
		for _, s := range suites.Suites {
			for _, c := range s.Cases {
				if c.Error != nil {
					names = append(names, s.Name+" "+c.Name)
				}
			}
		}
		Expect(names).To(ConsistOf("testdata/invalid/broken.json document 1", "testdata/invalid/broken.yaml document 2",
			"testdata/invalid/broken.yaml document 3", "testdata/invalid/broken.yaml document 4"))
	})
})
