package chart_test

import (
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/pkg/config"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the API server's twins rendered from a configuration", func() {
	DescribeTable("are the policies the chart renders from its values",
		func(doc string) {
			r := render(doc)
			obj, err := chart.DecodeStrict(r.get("ConfigMap", "kueue-guard-config"))
			Expect(err).NotTo(HaveOccurred())
			cfg, err := config.Decode([]byte(obj.(*corev1.ConfigMap).Data["config.yaml"]))
			Expect(err).NotTo(HaveOccurred())
			got, err := chart.RenderTwins(chart.TwinInputs{Config: cfg, FullName: "kueue-guard", Namespace: ns,
				MaxDeletionGraceSeconds: admission.DefaultMaxDeletionGraceSeconds, Mutating: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(got).NotTo(BeEmpty())
			for _, o := range got {
				kind := o.GetObjectKind().GroupVersionKind().Kind
				want, err := chart.DecodeStrict(r.get(kind, o.GetName()))
				Expect(err).NotTo(HaveOccurred(), kind+"/"+o.GetName())
				Expect(cmp.Diff(spec(want), spec(o))).To(BeEmpty(), "%s %s", kind, o.GetName())
			}
		},
		Entry("default values", ""),
		Entry("oss with frameworks, warned integrations, an ignored missing LocalQueue, a warning backstop",
			"config: {installProfile: oss, integrations: {action: warn, frameworks: [batch/job, pod]}, "+
				"defaulting: {missingLocalQueue: ignore, backstop: warn}, exemptNamespaces: [monitoring]}"),
	)
})

// spec is an object's spec, the part both renderings must agree on.
func spec(o runtime.Object) any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	Expect(err).NotTo(HaveOccurred())
	return u["spec"]
}
