package kueuecontroller_test

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
			container("main", "busybox").initContainer("setup", "registry.k8s.io/kueue/kueue:v0.19.2").obj(), true),
		Entry("only Kueue's chart label on the pod template", makeObj("Deployment", "a", "d").
			container("main", "busybox").podLabels("app.kubernetes.io/name", "kueue").obj(), true),
		Entry("kueueviz (passes the filter, Detect rejects it)", makeObj("Deployment", "a", "d").
			container("main", "registry.k8s.io/kueue/kueueviz-backend:v0.19.2").obj(), true),
		Entry("a flat mirror", makeObj("Deployment", "a", "d").container("m", "myregistry.azurecr.io/kueue:v0.19.2").obj(), true),
		Entry("only the chart's helm.sh/chart label", makeObj("Deployment", "a", "d").
			container("main", "busybox").labels("helm.sh/chart", "kueue-0.19.2").obj(), true),
		Entry("only the chart's annotation on the pod template", makeObj("Deployment", "a", "d").
			container("main", "busybox").podField(map[string]any{"charts.kueue.x-k8s.io/config-checksum": "x"}, "metadata", "annotations").obj(), true),
		Entry("a port named visibility", makeObj("Deployment", "a", "d").appendContainer("containers", map[string]any{
			"name": "m", "image": "example.com/x:v1", "ports": []any{map[string]any{"name": "visibility"}}}).obj(), true),
		Entry("a Kueue image in a Pod's ephemeral container", makeObj("Pod", "a", "p").container("c", "busybox").
			appendContainer("ephemeralContainers", map[string]any{"name": "dbg", "image": "registry.k8s.io/kueue/kueue:v0.19.2"}).obj(), true),
		Entry("a plain Deployment", makeObj("Deployment", "a", "web").container("web", "nginx:1.27").obj(), false),
		Entry("a plain Pod", makeObj("Pod", "a", "p").container("c", "busybox").obj(), false),
		Entry("a malformed object", &unstructured.Unstructured{Object: map[string]any{
			"kind": "Deployment", "spec": map[string]any{"template": "x"}}}, false),
	)
})
