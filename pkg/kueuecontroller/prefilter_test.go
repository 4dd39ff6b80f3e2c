package kueuecontroller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
)

var _ = Describe("MayRunKueue, the controller webhook's match condition", func() {
	DescribeTable("passes what Detect could match, and little else",
		func(obj *unstructured.Unstructured, want bool) {
			Expect(kueuecontroller.MayRunKueue(obj)).To(Equal(want))
			if _, detected := kueuecontroller.Detect(obj); detected {
				Expect(kueuecontroller.MayRunKueue(obj)).To(BeTrue(), "must be a superset of Detect")
			}
		},
		Entry("Kueue's chart Deployment", chartDeployment(), true),
		Entry("a renamed copy", renamedCopy(), true),
		Entry("its ReplicaSet", replicaSetOf(chartDeployment()), true),
		Entry("its Pod", podOf(replicaSetOf(chartDeployment())), true),
		Entry("a Kueue image in an init container", makeObj("Deployment", "a", "d").
			container("main", "busybox").initContainer("setup", "registry.k8s.io/kueue/kueue:v0.17.0").obj(), true),
		Entry("only Kueue's chart label on the pod template", makeObj("Deployment", "a", "d").
			container("main", "busybox").podLabels("app.kubernetes.io/name", "kueue").obj(), true),
		Entry("kueueviz (passes the filter, Detect rejects it)", makeObj("Deployment", "a", "d").
			container("main", "registry.k8s.io/kueue/kueueviz-backend:v0.17.0").obj(), true),
		Entry("a plain Deployment", makeObj("Deployment", "a", "web").container("web", "nginx:1.27").obj(), false),
		Entry("a plain Pod", makeObj("Pod", "a", "p").container("c", "busybox").obj(), false),
		Entry("a malformed object", &unstructured.Unstructured{Object: map[string]any{
			"kind": "Deployment", "spec": map[string]any{"template": "x"}}}, false),
	)
})
