package charttest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The admission policies `helm template` renders are valid to the API server
// itself: a server-side dry run of each, with their CEL compiled there.
var _ = Describe("the chart's admission policies", func() {
	DescribeTable("pass the API server's validation",
		func(values map[string]any, kinds ...string) {
			values["fullnameOverride"] = "dry-run"
			objs, err := testenv.RenderChart(values)
			Expect(err).NotTo(HaveOccurred())
			seen := map[string]int{}
			for _, o := range objs {
				if o.GroupVersionKind().Group != "admissionregistration.k8s.io" ||
					o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration" {
					continue // the webhook configurations are the suite's own, registered
				}
				Expect(k8sClient.Create(ctx, o.DeepCopyObject().(*unstructured.Unstructured), client.DryRunAll)).
					To(Succeed(), "%s %s", o.GetKind(), o.GetName())
				seen[o.GetKind()]++
			}
			for _, k := range kinds {
				Expect(seen).To(HaveKey(k))
			}
		},
		Entry("by default", map[string]any{}, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
			"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"),
		Entry("under availability failOpen", map[string]any{"availability": "failOpen"},
			"ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"),
	)
})
