package cluster

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

var _ = Describe("the informer cache of scaled kinds", func() {
	transform := func(gvk schema.GroupVersionKind) func(any) (any, error) {
		for obj, by := range CacheOptions(runtime.NewScheme(), DefaultKueueNamespace).ByObject {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == gvk {
				Expect(by.Transform).NotTo(BeNil())
				return by.Transform
			}
		}
		Fail("no cache entry for " + gvk.String())
		return nil
	}
	statefulSet := func(ownLabels, templateLabels map[string]any) *unstructured.Unstructured {
		meta := map[string]any{"name": "s", "namespace": "ns"}
		if ownLabels != nil {
			meta["labels"] = ownLabels
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{
				"metadata": map[string]any{"labels": templateLabels}, "spec": map[string]any{"containers": []any{}}}}}}
	}
	queue := map[string]any{integrations.QueueNameLabel: "q"}
	stsGVK := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}

	It("keeps a workload queued by its own label or its pod template's whole", func() {
		for _, sts := range []*unstructured.Unstructured{statefulSet(queue, nil), statefulSet(nil, queue)} {
			out, err := transform(stsGVK)(sts.DeepCopy())
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(Equal(sts))
			Expect(queued(out.(*unstructured.Unstructured))).To(BeTrue())
		}
	})

	It("keeps only the metadata of an unqueued one, and never takes it for queued", func() {
		out, err := transform(stsGVK)(statefulSet(map[string]any{"app": "s"}, map[string]any{"app": "s"}))
		Expect(err).NotTo(HaveOccurred())
		u := out.(*unstructured.Unstructured)
		Expect(u.Object).NotTo(HaveKey("spec"))
		Expect(u.GetName()).To(Equal("s"))
		Expect(u.GetLabels()).To(Equal(map[string]string{"app": "s"}))
		Expect(queued(u)).To(BeFalse())
	})

	It("keeps a queued Deployment whole and strips the rest to what the controller fingerprint reads", func() {
		dep := statefulSet(nil, queue)
		dep.SetKind("Deployment")
		out, err := transform(deploymentGVK)(dep.DeepCopy())
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(dep))

		plain := statefulSet(nil, map[string]any{"app": "d"})
		plain.SetKind("Deployment")
		out, err = transform(deploymentGVK)(plain)
		Expect(err).NotTo(HaveOccurred())
		_, found, _ := unstructured.NestedInt64(out.(*unstructured.Unstructured).Object, "spec", "replicas")
		Expect(found).To(BeFalse())
	})

	It("has one entry per kind, Deployment included once", func() {
		seen := map[schema.GroupVersionKind]int{}
		for _, obj := range CachedTypes() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				seen[u.GroupVersionKind()]++
			}
		}
		for _, in := range integrations.ScaleJudged() {
			Expect(seen[in.GVK]).To(Equal(1), in.GVK.String())
		}
	})
})

var _ = Describe("the snapshot's LimitRanges and RuntimeClasses", func() {
	It("lists a namespace's LimitRanges in name order and finds RuntimeClasses by name", func() {
		s, err := NewSnapshot(
			&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z"}},
			&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}},
			&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "c"}},
			&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata"})
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, lr := range s.LimitRanges("a") {
			names = append(names, lr.Name)
		}
		Expect(names).To(Equal([]string{"b", "z"}))
		rc, ok := s.RuntimeClass("kata")
		Expect(ok).To(BeTrue())
		Expect(rc.Handler).To(Equal("kata"))
		_, ok = s.RuntimeClass("gvisor")
		Expect(ok).To(BeFalse())
	})
})
