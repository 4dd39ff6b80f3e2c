package rulesdoc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/rulesdoc"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestRulesDoc(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Rules Doc Suite")
}

func root() string {
	GinkgoHelper()
	wd, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	r, err := chart.RepoRoot(wd)
	Expect(err).NotTo(HaveOccurred())
	return r
}

var _ = Describe("the rule table", func() {
	It("is up to date (run `make generate` when this fails)", func() {
		Expect(rulesdoc.Drift(root())).To(BeFalse())
	})

	// Adding a built-in rule is one registry entry (plus its check): the
	// reviewer, SARIF, the chart and the docs all read the registry.
	It("picks up a new rule everywhere, from its registry entry alone", func() {
		const id = admission.RuleNamespace + ".fake_rule"
		admission.Register(admission.Rule{ID: id, Title: "A fake rule", Doc: "Registered by a test.",
			Enforcement: admission.EnforcementWarn, Check: "fake-step",
			CEL: &admission.CELTwin{Name: "fake",
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "true"}}}})
		DeferCleanup(admission.Unregister, id)

		By("the reviewer's rule list")
		var ids []string
		for _, r := range review.AllRules(nil) {
			ids = append(ids, r.ID)
		}
		Expect(ids).To(ContainElement(id))

		By("the SARIF output's rules")
		c := &review.CLI{Version: "test"}
		fs := pflag.NewFlagSet("review", pflag.ContinueOnError)
		c.AddFlags(fs)
		Expect(fs.Parse([]string{"-f", "-", "-o", "sarif"})).To(Succeed())
		var out, errOut bytes.Buffer
		_, _ = c.Run(context.Background(), fs, fs.Args(), strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), &out, &errOut)
		var log struct {
			Runs []struct {
				Tool struct {
					Driver struct {
						Rules []struct {
							ID   string `json:"id"`
							Name string `json:"name"`
						} `json:"rules"`
					} `json:"driver"`
				} `json:"tool"`
			} `json:"runs"`
		}
		Expect(json.Unmarshal(out.Bytes(), &log)).To(Succeed(), errOut.String())
		Expect(log.Runs[0].Tool.Driver.Rules).To(ContainElement(SatisfyAll(
			HaveField("ID", id), HaveField("Name", "A fake rule"))))

		By("the chart's generated admission policies, rendered")
		gen, err := chart.Generated(root())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(gen[chart.AdmissionPoliciesFile])).To(ContainSubstring("rule: " + id))
		ch, err := chart.LoadFromRepo(root())
		Expect(err).NotTo(HaveOccurred())
		for _, f := range ch.Chart.Files {
			if f.Name == chart.AdmissionPoliciesFile {
				f.Data = gen[chart.AdmissionPoliciesFile]
			}
		}
		objs, err := ch.Render(nil)
		Expect(err).NotTo(HaveOccurred())
		var policies []string
		for _, o := range objs {
			if o.GetKind() == "ValidatingAdmissionPolicy" {
				policies = append(policies, o.GetName()+" "+o.GetLabels()["kueue-guard.io/rule"])
			}
		}
		Expect(policies).To(ContainElement("kueue-guard-fake " + id))

		By("the docs' rule table")
		md, err := rulesdoc.Markdown(root())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(md)).To(ContainSubstring("| `" + id + "` | A fake rule | warn | both | `fake-step` step; CEL twin `fake` |"))
	})
})
