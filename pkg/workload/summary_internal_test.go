package workload

import (
	"context"
	"fmt"

	ginkgo "github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	. "github.com/onsi/gomega"
)

// These specs live inside the package (ginkgo is not dot-imported: the package
// has its own Labels) to reach the builder table and the panic boundary.

var _ = ginkgo.Describe("podSetBuilders", func() {
	ginkgo.It("has exactly one builder per catalog kind", func() {
		want := map[schema.GroupKind]bool{}
		for _, in := range integrations.All() {
			want[in.GVK.GroupKind()] = true
			Expect(podSetBuilders).To(HaveKey(in.GVK.GroupKind()), "catalog kind %s has no builder", in.Key())
		}
		for gk := range podSetBuilders {
			Expect(want).To(HaveKey(gk), "builder for %s, which is not in the catalog", gk)
		}
	})
})

var _ = ginkgo.Describe("summarize", func() {
	ginkgo.It("turns a panic in third-party code into an error naming the kind and object", func() {
		builders := map[schema.GroupKind]podSetsFunc{
			{Group: "ray.io", Kind: "RayJob"}: func(context.Context, *unstructured.Unstructured, *Options) ([]kueue.PodSet, error) {
				var client fmt.Stringer
				_ = client.String() // what an adapter does with a nil reconciler client
				return nil, nil
			},
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ray.io/v1", "kind": "RayJob",
			"metadata": map[string]any{"name": "train", "namespace": "ns"},
		}}
		var err error
		Expect(func() { _, err = summarize(context.Background(), obj, builders, nil) }).NotTo(Panic())
		Expect(err).To(MatchError(HavePrefix("computing pod sets of RayJob ns/train: internal error: ")))
	})

	ginkgo.It("reports a catalog kind without a builder as an internal error", func() {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job"}}
		_, err := summarize(context.Background(), obj, nil, nil)
		Expect(err).To(MatchError(ContainSubstring("internal error: no pod-set builder")))
	})
})
