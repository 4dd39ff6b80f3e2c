package review_test

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the reviewer's lists agree with the pipeline's", func() {
	It("lists every built-in rule of the registry, with the registry's words", func() {
		all := map[string]review.RuleInfo{}
		for _, r := range review.AllRules(nil) {
			all[r.ID] = r
		}
		Expect(admission.Rules()).NotTo(BeEmpty())
		for _, r := range admission.Rules() {
			Expect(all).To(HaveKeyWithValue(r.ID, review.RuleInfo{ID: r.ID, Title: r.Title, Description: r.Doc,
				Enforcement: string(r.Enforcement)}))
		}
	})

	It("checks exactly the kinds the controller webhook is registered for, plus webhook configurations", func() {
		resources := map[string]bool{}
		for _, r := range webhookconfig.ControllerRules() {
			for _, res := range r.Resources {
				if strings.Contains(res, "/") {
					continue // a subresource (a Pod's ephemeralcontainers): the reviewer sees whole objects
				}
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
