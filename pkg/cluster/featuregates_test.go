package cluster

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kueue/pkg/features"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

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

	It("keeps off the gates only Kueue's scheduler reads, whatever the Configuration sets", func() {
		var g KueueFeatureGates
		DeferCleanup(func() { Expect(g.Apply(nil)).To(Succeed()) })
		Expect(features.Enabled(features.SchedulingEquivalenceHashing)).To(BeFalse(), "off from the start, against Kueue 0.19's default")
		Expect(g.Apply(map[string]bool{"SchedulingEquivalenceHashing": true})).To(Succeed())
		Expect(features.Enabled(features.SchedulingEquivalenceHashing)).To(BeFalse())
		Expect(g.Apply(map[string]bool{})).To(Succeed())
		Expect(features.Enabled(features.SchedulingEquivalenceHashing)).To(BeFalse(), "not reset to Kueue's default either")
	})

	It("keeps on the gates that only give Kueue's reasons their words, whatever the Configuration sets", func() {
		var g KueueFeatureGates
		DeferCleanup(func() { Expect(g.Apply(nil)).To(Succeed()) })
		Expect(features.Enabled(features.UnadmittedWorkloadsObservability)).To(BeTrue(), "on from the start, against Kueue 0.19's default")
		Expect(g.Apply(map[string]bool{"UnadmittedWorkloadsObservability": false})).To(Succeed())
		Expect(features.Enabled(features.UnadmittedWorkloadsObservability)).To(BeTrue())
		Expect(g.Apply(map[string]bool{})).To(Succeed())
		Expect(features.Enabled(features.UnadmittedWorkloadsObservability)).To(BeTrue(), "not reset to Kueue's default either")
	})

	It("names a gate Kueue does not know, and still applies the others", func() {
		var g KueueFeatureGates
		DeferCleanup(func() { Expect(g.Apply(nil)).To(Succeed()) })
		err := g.Apply(map[string]bool{"NoSuchGate": true, "WorkloadIdentifierAnnotations": false})
		Expect(err).To(MatchError(ContainSubstring(`unknown feature gate "NoSuchGate"`)))
		Expect(features.Enabled(features.WorkloadIdentifierAnnotations)).To(BeFalse())
	})
})

var _ = Describe("the arithmetic under Kueue's feature gates", func() {
	// A pod of a group of 4 named only by annotation: Kueue 0.19 reads the
	// annotation (WorkloadIdentifierAnnotations, on by default); with the gate
	// off it reads the label only, and the pod is a workload of its own.
	groupPod := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "ns", "annotations": map[string]any{
				"kueue.x-k8s.io/pod-group-name": "train", "kueue.x-k8s.io/pod-group-total-count": "4"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i",
				"resources": map[string]any{"requests": map[string]any{"nvidia.com/gpu": "2"}, "limits": map[string]any{"nvidia.com/gpu": "2"}}}}}}}
	}
	gpus := func() string {
		sum, err := workload.Summarize(context.Background(), groupPod())
		Expect(err).NotTo(HaveOccurred())
		return sum.TotalRequests.Name("nvidia.com/gpu", "").String()
	}

	It("follows the gates the Configuration sets", func() {
		var g KueueFeatureGates
		DeferCleanup(func() { Expect(g.Apply(nil)).To(Succeed()) })
		Expect(gpus()).To(Equal("8"), "Kueue's default: the group of 4")
		Expect(g.Apply(map[string]bool{"WorkloadIdentifierAnnotations": false})).To(Succeed())
		Expect(gpus()).To(Equal("2"), "the gate off: one pod")
	})
})
