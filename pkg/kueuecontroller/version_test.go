package kueuecontroller_test

import (
	"os"
	"strings"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Kueue versions", func() {
	DescribeTable("the release a manager says it runs",
		func(build func() *unstructured.Unstructured, want string) {
			m, ok := kueuecontroller.Detect(build())
			Expect(ok).To(BeTrue())
			Expect(m.Version).To(Equal(want))
		},
		Entry("the image tag", func() *unstructured.Unstructured {
			return makeObj("Deployment", "kueue-system", "m").container("manager", "registry.k8s.io/kueue/kueue:v0.19.2").obj()
		}, "v0.19.2"),
		Entry("AKS's managed extension tag, without a v", func() *unstructured.Unstructured {
			return makeObj("Deployment", "kube-system", "m").container("manager", "mcr.microsoft.com/aks/kueue/kueue-controller-manager:0.19.6-aks.20260901").obj()
		}, "v0.19.6-aks.20260901"),
		Entry("a digest-only image: the chart's app.kubernetes.io/version label", func() *unstructured.Unstructured {
			return makeObj("Deployment", "kueue-system", "m").labels("app.kubernetes.io/version", "v0.17.0").
				container("manager", "registry.k8s.io/kueue/kueue@sha256:0123").obj()
		}, "v0.17.0"),
		Entry("a tag that is no release (latest): the chart label helm.sh/chart", func() *unstructured.Unstructured {
			return makeObj("Deployment", "kueue-system", "m").labels("helm.sh/chart", "kueue-0.20.1", "app.kubernetes.io/component", "controller").
				container("manager", "registry.k8s.io/kueue/kueue:latest").obj()
		}, "v0.20.1"),
		Entry("nothing names one", func() *unstructured.Unstructured {
			return makeObj("Deployment", "kueue-system", "m").container("manager", "registry.k8s.io/kueue/kueue@sha256:0123").obj()
		}, ""),
		Entry("a registry port is not a tag", func() *unstructured.Unstructured {
			return makeObj("Deployment", "kueue-system", "m").container("manager", "localhost:5000/kueue/kueue").obj()
		}, ""),
	)

	DescribeTable("Assess",
		func(version string, want kueuecontroller.Support) {
			got := kueuecontroller.Assess(version)
			Expect(cmp.Diff(want.Tested, got.Tested)).To(BeEmpty())
			Expect(cmp.Diff(want.Minor, got.Minor)).To(BeEmpty())
			if len(want.Differences) > 0 {
				Expect(got.Differences).NotTo(BeEmpty())
			} else {
				Expect(got.Differences).To(BeEmpty())
			}
		},
		Entry("the tested release", kueuecontroller.TestedVersion, kueuecontroller.Support{Minor: "v0.19", Tested: true}),
		Entry("another patch of the tested minor (AKS)", "v0.19.6-aks.1", kueuecontroller.Support{Minor: "v0.19", Tested: true}),
		Entry("an older minor", "v0.17.0", kueuecontroller.Support{Minor: "v0.17", Differences: []string{"…"}}),
		Entry("a newer minor", "v0.20.0", kueuecontroller.Support{Minor: "v0.20", Differences: []string{"…"}}),
		Entry("a newer major", "v1.0.0", kueuecontroller.Support{Minor: "v1.0", Differences: []string{"…"}}),
		Entry("unknown", "", kueuecontroller.Support{}),
	)

	It("names v1beta1's removal for 0.20 and later, and not for 0.19", func() {
		Expect(strings.Join(kueuecontroller.Assess("v0.21.0").Differences, ";")).To(ContainSubstring("v1beta1"))
		Expect(kueuecontroller.Assess("v0.19.0").Differences).To(BeEmpty())
	})

	It("formats feature gates as Kueue's flag, sorted", func() {
		Expect(kueuecontroller.FormatFeatureGates(map[string]bool{"TopologyAwareScheduling": false, "AdmissionGatedBy": true})).
			To(Equal("AdmissionGatedBy=true,TopologyAwareScheduling=false"))
	})

	It("is the release of go.mod's Kueue and of the manager the tests run", func() {
		for _, mod := range []string{"../../go.mod", "../../hack/kueue/go.mod"} {
			data, err := os.ReadFile(mod)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(data)).To(MatchRegexp(`(?m)^\s*sigs\.k8s\.io/kueue `+strings.ReplaceAll(kueuecontroller.TestedVersion, ".", `\.`)+`\b`), mod)
		}
	})
})
