package cluster

import (
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the parents Kueue's ancestry walk reads", func() {
	jobSet := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}

	It("caches every kind Kueue manages as a whole but Pods and the kinds cached for their scale", func() {
		gvks := parentKinds
		Expect(gvks).To(ContainElements(jobSet, schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayJob"}))
		Expect(gvks).NotTo(ContainElement(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}))
		Expect(gvks).NotTo(ContainElement(deploymentGVK), "cached whole or stripped for its scale already")
		Expect(ParentKind(deploymentGVK)).To(BeTrue(), "answered from the Deployment cache")
	})

	DescribeTable("keeps a parent's identity, queue label, controller owner and Kueue's reason to ignore it",
		func(in, want map[string]any) {
			out, err := stripLink(&unstructured.Unstructured{Object: in})
			Expect(err).NotTo(HaveOccurred())
			Expect(cmp.Diff(want, out.(*unstructured.Unstructured).Object)).To(BeEmpty())
			again, err := stripLink(out)
			Expect(err).NotTo(HaveOccurred())
			Expect(again).To(Equal(out), "informers may apply a transform more than once")
		},
		Entry("a JobSet with a large template, many labels and owners",
			map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
				"metadata": map[string]any{"name": "js", "namespace": "t", "uid": "u", "resourceVersion": "3",
					"labels":      map[string]any{integrations.QueueNameLabel: "lq", "big": "x"},
					"annotations": map[string]any{"a": "b"},
					"ownerReferences": []any{
						map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"},
						map[string]any{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "tj", "uid": "tj", "controller": true},
					}},
				"spec": map[string]any{"replicatedJobs": []any{map[string]any{"name": "w"}}}},
			map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
				"metadata": map[string]any{"name": "js", "namespace": "t", "uid": "u", "resourceVersion": "3",
					"labels": map[string]any{integrations.QueueNameLabel: "lq"},
					"ownerReferences": []any{
						map[string]any{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "tj", "uid": "tj", "controller": true},
					}}}),
		Entry("a RayJob on an existing cluster, unqueued",
			map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob",
				"metadata": map[string]any{"name": "r", "namespace": "t", "uid": "u", "labels": map[string]any{"x": "y"}},
				"spec":     map[string]any{"clusterSelector": map[string]any{"ray.io/cluster": "c"}, "entrypoint": "python"}},
			map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob",
				"metadata": map[string]any{"name": "r", "namespace": "t", "uid": "u"},
				"spec":     map[string]any{"clusterSelector": map[string]any{"ray.io/cluster": "c"}}}),
	)

	It("answers from a snapshot for the cached parents and the scaled kinds", func() {
		js := newUnstructured(jobSet)
		js.SetNamespace("t")
		js.SetName("js")
		dep := newDeployment()
		dep.SetNamespace("t")
		dep.SetName("web")
		s, err := NewSnapshot(js, dep)
		Expect(err).NotTo(HaveOccurred())
		for _, u := range []*unstructured.Unstructured{js, dep} {
			got, ok, err := s.Parent(u.GroupVersionKind(), "t", u.GetName())
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue(), u.GetKind())
			Expect(got.GetName()).To(Equal(u.GetName()))
		}
		_, ok, _ := s.Parent(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "t", "js")
		Expect(ok).To(BeFalse())
	})
})
