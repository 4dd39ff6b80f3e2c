package cluster

import (
	"sigs.k8s.io/kueue/pkg/features"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("KueueFeatureGates", func() {
	It("runs Kueue's code under the Configuration's gates, and back to Kueue's defaults when it stops setting them", func() {
		var g KueueFeatureGates
		DeferCleanup(func() { Expect(g.Apply(nil)).To(Succeed()) })
		Expect(features.Enabled(features.WorkloadIdentifierAnnotations)).To(BeTrue(), "Kueue 0.19's default")

		Expect(g.Apply(map[string]bool{"WorkloadIdentifierAnnotations": false})).To(Succeed())
		Expect(features.Enabled(features.WorkloadIdentifierAnnotations)).To(BeFalse())

		Expect(g.Apply(map[string]bool{})).To(Succeed())
		Expect(features.Enabled(features.WorkloadIdentifierAnnotations)).To(BeTrue(), "reset to the default")
	})

	It("names a gate Kueue does not know, and still applies the others", func() {
		var g KueueFeatureGates
		DeferCleanup(func() { Expect(g.Apply(nil)).To(Succeed()) })
		err := g.Apply(map[string]bool{"NoSuchGate": true, "WorkloadIdentifierAnnotations": false})
		Expect(err).To(MatchError(ContainSubstring(`unknown feature gate "NoSuchGate"`)))
		Expect(features.Enabled(features.WorkloadIdentifierAnnotations)).To(BeFalse())
	})
})
