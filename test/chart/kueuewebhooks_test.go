package charttest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kueueWebhookConfigurations renders Kueue's own chart into a namespace and
// returns its webhook configurations, renamed so two installs can be compared.
func kueueWebhookConfigurations(namespace string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := testenv.RenderKueueChart("kueue", namespace, nil)
	Expect(err).NotTo(HaveOccurred())
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration" {
			o.SetName(namespace + "-" + o.GetName())
			out = append(out, o)
		}
	}
	Expect(out).To(HaveLen(2))
	return out
}

var _ = Describe("the chart's ValidatingAdmissionPolicy for Kueue's webhooks", Ordered, func() {
	BeforeAll(func() {
		objs, err := testenv.ChartAdmissionPolicies(chartValues(), admission.RuleKueueWebhookSingleton)
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(2), "the chart renders the policy and its binding")
		for _, o := range objs {
			Expect(k8sClient.Create(ctx, o)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, o))).To(Succeed()) })
		}
	})

	It("rejects Kueue's webhooks registered for a second install in another namespace", func() {
		for _, o := range kueueWebhookConfigurations("kueue-second") {
			Eventually(func() error { return k8sClient.Create(ctx, o.DeepCopy(), client.DryRunAll) }).
				Should(MatchError(And(
					ContainSubstring("[kueue_guard.kueue_webhook_singleton] registers Kueue's webhook"),
					ContainSubstring("for service kueue-second/kueue-webhook-service, but Kueue runs in kueue-system"),
				)), o.GetKind())
		}
	})

	It("admits Kueue's own webhooks in kueue-system", func() {
		for _, o := range kueueWebhookConfigurations("kueue-system") {
			Expect(k8sClient.Create(ctx, o, client.DryRunAll)).To(Succeed(), o.GetKind())
		}
	})
})
