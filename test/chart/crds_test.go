package charttest

import (
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/audit"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The chart's OpenReports CRDs, on an API server that has none: they are
// served, and hold the Reports the audit writes, as kubectl shows them.
var _ = Describe("the chart's OpenReports CRDs (audit.reports.installCRDs)", Ordered, func() {
	var c client.Client

	BeforeAll(func() {
		s := runtime.NewScheme()
		Expect(audit.AddToScheme(s)).To(Succeed())
		Expect(corev1.AddToScheme(s)).To(Succeed())
		Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
		var err error
		c, err = client.New(env.Config, client.Options{Scheme: s})
		Expect(err).NotTo(HaveOccurred())
		objs, err := testenv.RenderChart(map[string]any{"audit": map[string]any{"reports": map[string]any{"installCRDs": true}}})
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				Expect(k8sClient.Create(ctx, o)).To(Succeed())
				names = append(names, o.GetName())
			}
		}
		Expect(names).To(ConsistOf("reports.openreports.io", "clusterreports.openreports.io"))
		for _, name := range names {
			Eventually(func(g Gomega) {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
				established := false
				for _, cond := range crd.Status.Conditions {
					if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
						established = true
					}
				}
				g.Expect(established).To(BeTrue(), "%s established", name)
			}).WithTimeout(30 * time.Second).Should(Succeed())
		}
	})

	It("store a Report as the audit writes it, and kubectl lists it with its summary", func() {
		Expect(client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "reports"}}))).To(Succeed())
		r := &openreports.Report{
			ObjectMeta: metav1.ObjectMeta{Namespace: "reports", Name: audit.ReportName,
				Labels: map[string]string{audit.ManagedByLabel: "kueue-guard"}},
			Source: audit.Source,
			Scope:  &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "reports"},
			Results: []openreports.ReportResult{{Source: audit.Source, Policy: "team.gpu_cap", Result: audit.ResultFail,
				Severity: "high", Description: "requests 8 GPUs, more than 4", Scored: true,
				Subjects: []corev1.ObjectReference{{APIVersion: "batch/v1", Kind: "Job", Namespace: "reports", Name: "big"}}}},
			Summary: openreports.ReportSummary{Fail: 1},
		}
		Expect(c.Create(ctx, r)).To(Succeed())
		// The read-back is strict: a field the CRD's schema prunes would be lost.
		got := &openreports.Report{}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(r), got)).To(Succeed())
		Expect(got.Results).To(Equal(r.Results))
		Expect(got.Summary).To(Equal(r.Summary))
		out, stderr, err := env.Kubectl(nil, "get", "reports", "-n", "reports")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(MatchRegexp(`(?m)^kueue-guard\s+0\s+1\s+0\s+0\s+0\s`))
	})
})
