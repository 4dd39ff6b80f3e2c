package review

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// sarifSchemaPath is the OASIS SARIF 2.1.0 JSON schema (errata 01), copied
// verbatim from oasis-tcs/sarif-spec Schemata/sarif-schema-2.1.0.json so that
// the test runs offline.
var sarifSchemaPath = filepath.Join("testdata", "sarif-schema-2.1.0.json")

func sarifSchema() *jsonschema.Schema {
	GinkgoHelper()
	f, err := os.Open(sarifSchemaPath)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	Expect(err).NotTo(HaveOccurred())
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	Expect(c.AddResource(review.SARIFSchemaURI, doc)).To(Succeed())
	s, err := c.Compile(review.SARIFSchemaURI)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func validate(s *jsonschema.Schema, data []byte) error {
	GinkgoHelper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	Expect(err).NotTo(HaveOccurred())
	return s.Validate(inst)
}

var _ = Describe("the SARIF output", func() {
	It("validates against the SARIF 2.1.0 JSON schema, with findings and with input errors", func() {
		s := sarifSchema()
		for _, args := range [][]string{
			with(corpusArgs, "-o", "sarif"),
			{"-f", "testdata/invalid", "--config", "testdata/config.yaml", "-o", "sarif"},
			{"-f", "testdata/corpus/batch", "--config", "testdata/config.yaml", "-o", "sarif"},
		} {
			_, out, _ := runCLI("", args)
			Expect(validate(s, out)).To(Succeed(), "%v", args)
		}
		_, out, _ := runCLI(stdinOf("testdata/corpus/kubeflow/pytorchjob.yaml"), []string{"-f", "-", "-o", "sarif"})
		Expect(validate(s, out)).To(Succeed(), "stdin")
	})

	It("is checked by a validator that rejects what the schema forbids", func() {
		s := sarifSchema()
		_, out, _ := runCLI("", with(corpusArgs, "-o", "sarif"))
		var log map[string]any
		Expect(json.Unmarshal(out, &log)).To(Succeed())
		run := log["runs"].([]any)[0].(map[string]any)
		result := run["results"].([]any)[0].(map[string]any)
		result["level"] = "fatal"
		bad, err := json.Marshal(log)
		Expect(err).NotTo(HaveOccurred())
		Expect(validate(s, bad)).To(MatchError(ContainSubstring("level")))

		result["level"] = "error"
		result["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)["region"] = map[string]any{"startLine": 0}
		bad, err = json.Marshal(log)
		Expect(err).NotTo(HaveOccurred())
		Expect(validate(s, bad)).To(HaveOccurred())

		delete(log, "version")
		bad, err = json.Marshal(log)
		Expect(err).NotTo(HaveOccurred())
		Expect(validate(s, bad)).To(MatchError(ContainSubstring("version")))
	})

	It("locates each finding at its field's line in the manifest", func() {
		_, out, _ := runCLI("", with(corpusArgs, "-o", "sarif"))
		var log struct {
			Runs []struct {
				Results []struct {
					RuleID    string `json:"ruleId"`
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI, URIBaseID string }
							Region           struct{ StartLine int }
						}
					}
				}
			}
		}
		Expect(json.Unmarshal(out, &log)).To(Succeed())
		found := false
		for _, r := range log.Runs[0].Results {
			loc := r.Locations[0].PhysicalLocation
			if r.RuleID == "kueue_guard.require_resource_requests" && loc.ArtifactLocation.URI == "testdata/corpus/ray/rayjob.yaml" {
				Expect(loc.Region.StartLine).To(Equal(61))
				found = true
			}
		}
		Expect(found).To(BeTrue())
	})
})
