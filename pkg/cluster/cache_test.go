package cluster

import (
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the informer cache of scaled kinds", func() {
	// A kind's transform: its own entry's (Deployments), else the default
	// transform, which dispatches by kind (the other scaled kinds, whose CRD
	// may not exist when the cache is created).
	transform := func(gvk schema.GroupVersionKind) func(any) (any, error) {
		opts := CacheOptions(runtime.NewScheme(), DefaultKueueNamespace)
		for obj, by := range opts.ByObject {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == gvk {
				Expect(by.Transform).NotTo(BeNil())
				return by.Transform
			}
		}
		Expect(opts.DefaultTransform).NotTo(BeNil())
		return opts.DefaultTransform
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

	It("keeps of any copy's container arguments only what the controller fingerprint reads", func() {
		junk := strings.Repeat("x", 32<<10)
		withArgs := func(labels map[string]any) *unstructured.Unstructured {
			d := statefulSet(nil, labels)
			d.SetKind("Deployment")
			Expect(unstructured.SetNestedSlice(d.Object, []any{map[string]any{"name": "m", "image": "busybox",
				"command": []any{"/manager", junk}, "args": []any{junk, "--config=/c/controller_manager_config.yaml", junk}}},
				"spec", "template", "spec", "containers")).To(Succeed())
			return d
		}
		for _, d := range []*unstructured.Unstructured{withArgs(queue), withArgs(map[string]any{"app": "d"})} {
			out, err := transform(deploymentGVK)(d)
			Expect(err).NotTo(HaveOccurred())
			containers, _, _ := unstructured.NestedSlice(out.(*unstructured.Unstructured).Object, "spec", "template", "spec", "containers")
			Expect(containers).To(HaveLen(1))
			Expect(containers[0]).NotTo(HaveKey("command"))
			Expect(containers[0]).To(HaveKeyWithValue("args", []any{"--config=/c/controller_manager_config.yaml"}))
		}
	})

	It("keeps a queued workload larger than the bound as an unqueued one, marked so that its scale is refused", func() {
		big := statefulSet(queue, nil)
		Expect(unstructured.SetNestedSlice(big.Object, []any{map[string]any{"name": "m",
			"env": []any{map[string]any{"name": "E", "value": strings.Repeat("x", maxCachedWorkload)}}}},
			"spec", "template", "spec", "containers")).To(Succeed())
		out, err := transform(stsGVK)(big)
		Expect(err).NotTo(HaveOccurred())
		u := out.(*unstructured.Unstructured)
		Expect(u.Object).NotTo(HaveKey("spec"))
		Expect(u.GetAnnotations()).To(HaveKey(cacheTrimmedAnnotation))
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

var _ = Describe("following the cluster's CRDs", func() {
	crd := func(group, kind string, versions map[string]bool, established bool) *unstructured.Unstructured {
		var vs []any
		for name, served := range versions {
			vs = append(vs, map[string]any{"name": name, "served": served, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "description": "large"}}})
		}
		status := "False"
		if established {
			status = "True"
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "localqueues." + group, "resourceVersion": "7"},
			"spec":     map[string]any{"group": group, "names": map[string]any{"kind": kind, "plural": "localqueues"}, "versions": vs},
			"status":   map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": status}}},
		}}
		out, err := stripCRD(u)
		Expect(err).NotTo(HaveOccurred())
		return out.(*unstructured.Unstructured)
	}
	lq := schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "LocalQueue"}

	It("keeps only what says whether a kind is served, and changes nothing when applied again", func() {
		u := crd("kueue.x-k8s.io", "LocalQueue", map[string]bool{"v1beta2": true}, true)
		Expect(u.GetName()).To(Equal("localqueues.kueue.x-k8s.io"))
		Expect(u.Object["spec"]).To(Equal(map[string]any{"group": "kueue.x-k8s.io",
			"names": map[string]any{"kind": "LocalQueue"}, "versions": []any{map[string]any{"name": "v1beta2", "served": true}}}))
		again, err := stripCRD(u.DeepCopy())
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(u), "informers may apply a transform more than once")
		Expect(crdServes(again.(*unstructured.Unstructured), lq)).To(BeTrue())
	})

	DescribeTable("serves a kind at the version this build reads, once established",
		func(versions map[string]bool, established bool, want bool) {
			Expect(crdServes(crd("kueue.x-k8s.io", "LocalQueue", versions, established), lq)).To(Equal(want))
		},
		Entry("served and established", map[string]bool{"v1beta1": true, "v1beta2": true}, true, true),
		Entry("not established yet", map[string]bool{"v1beta2": true}, false, false),
		Entry("another version only (a managed Kueue on v1beta1)", map[string]bool{"v1beta1": true}, true, false),
		Entry("the version defined but not served", map[string]bool{"v1beta2": false, "v1beta1": true}, true, false),
	)

	It("does not take another group's kind of the same name", func() {
		Expect(crdServes(crd("example.com", "LocalQueue", map[string]bool{"v1beta2": true}, true), lq)).To(BeFalse())
	})
})

var _ = Describe("where a CRD's scale puts the replicas", func() {
	crd := func(version, path string) *unstructured.Unstructured {
		v := map[string]any{"name": version, "served": true}
		if path != "" {
			v["subresources"] = map[string]any{"scale": map[string]any{"specReplicasPath": path}}
		}
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"versions": []any{v}}}}
	}
	gvk := schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}
	DescribeTable("reads specReplicasPath at the version read",
		func(c *unstructured.Unstructured, want []string) {
			got, ok := scaleReplicasPath(c, gvk)
			Expect(ok).To(Equal(want != nil))
			Expect(cmp.Diff(want, got)).To(BeEmpty())
		},
		Entry("a Worker path", crd("v1", ".spec.pytorchReplicaSpecs.Worker.replicas"), []string{"spec", "pytorchReplicaSpecs", "Worker", "replicas"}),
		Entry("no scale subresource", crd("v1", ""), nil),
		Entry("another version's only", crd("v2", ".spec.replicas"), nil),
		Entry("not a JSON path", crd("v1", "spec.replicas"), nil),
		Entry("an empty field", crd("v1", ".spec..replicas"), nil),
	)
})
