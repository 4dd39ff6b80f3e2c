package kueuecontroller_test

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("IdentityOf", func() {
	kueueID := kueuecontroller.Identity{Kind: "Deployment", Namespace: kueueNamespace, Name: kueueDeployment}
	rsName := kueueDeployment + "-" + podTemplateHash

	DescribeTable("names the top-level controller",
		func(build func() *unstructured.Unstructured, want kueuecontroller.Identity) {
			Expect(kueuecontroller.IdentityOf(build())).To(Equal(want))
		},
		Entry("Kueue's chart Deployment is itself", chartDeployment, kueueID),
		Entry("its ReplicaSet is the Deployment",
			func() *unstructured.Unstructured { return replicaSetOf(chartDeployment()) }, kueueID),
		Entry("its Pod is the Deployment",
			func() *unstructured.Unstructured { return podOf(replicaSetOf(chartDeployment())) }, kueueID),
		Entry("the renamed copy is itself", renamedCopy,
			kueuecontroller.Identity{Kind: "Deployment", Namespace: "team-a", Name: "batch-scheduler"}),
		Entry("a Pod of the renamed copy is the renamed copy",
			func() *unstructured.Unstructured { return podOf(replicaSetOf(renamedCopy())) },
			kueuecontroller.Identity{Kind: "Deployment", Namespace: "team-a", Name: "batch-scheduler"}),
		Entry("a Deployment whose name contains dashes and the hash", func() *unstructured.Unstructured {
			d := makeObj("Deployment", "ops", "a-"+podTemplateHash+"-b").container("c", "nginx:1.27").obj()
			return podOf(replicaSetOf(d))
		}, kueuecontroller.Identity{Kind: "Deployment", Namespace: "ops", Name: "a-" + podTemplateHash + "-b"}),
		Entry("a look-alike Pod in another namespace keeps its own namespace", func() *unstructured.Unstructured {
			return makeObj("Pod", "team-a", "p").podLabels("pod-template-hash", podTemplateHash).
				owner("apps/v1", "ReplicaSet", rsName, true).obj()
		}, kueuecontroller.Identity{Kind: "Deployment", Namespace: "team-a", Name: kueueDeployment}),
		Entry("a StatefulSet is itself", func() *unstructured.Unstructured {
			return makeObj("StatefulSet", "ops", "kq").obj()
		}, kueuecontroller.Identity{Kind: "StatefulSet", Namespace: "ops", Name: "kq"}),
		Entry("a Pod of a StatefulSet is the StatefulSet", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "kq-0").owner("apps/v1", "StatefulSet", "kq", true).obj()
		}, kueuecontroller.Identity{Kind: "StatefulSet", Namespace: "ops", Name: "kq"}),
		Entry("a DaemonSet is itself", func() *unstructured.Unstructured {
			return makeObj("DaemonSet", "ops", "kq").obj()
		}, kueuecontroller.Identity{Kind: "DaemonSet", Namespace: "ops", Name: "kq"}),
		Entry("a Pod of a DaemonSet is the DaemonSet", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "kq-abcde").owner("apps/v1", "DaemonSet", "kq", true).obj()
		}, kueuecontroller.Identity{Kind: "DaemonSet", Namespace: "ops", Name: "kq"}),
		Entry("a ReplicaSet without an owner is itself", func() *unstructured.Unstructured {
			return makeObj("ReplicaSet", "ops", "kq").obj()
		}, kueuecontroller.Identity{Kind: "ReplicaSet", Namespace: "ops", Name: "kq"}),
		Entry("a Pod of a bare ReplicaSet (no pod-template-hash) is the ReplicaSet", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "kq-abcde").owner("apps/v1", "ReplicaSet", "kq", true).obj()
		}, kueuecontroller.Identity{Kind: "ReplicaSet", Namespace: "ops", Name: "kq"}),
		Entry("a Pod whose hash is not its ReplicaSet's suffix is the ReplicaSet", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "kq-abcde").podLabels("pod-template-hash", "zzz").
				owner("apps/v1", "ReplicaSet", rsName, true).obj()
		}, kueuecontroller.Identity{Kind: "ReplicaSet", Namespace: "ops", Name: rsName}),
		Entry("a Pod whose ReplicaSet name is only the hash is the ReplicaSet", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "p").podLabels("pod-template-hash", podTemplateHash).
				owner("apps/v1", "ReplicaSet", "-"+podTemplateHash, true).obj()
		}, kueuecontroller.Identity{Kind: "ReplicaSet", Namespace: "ops", Name: "-" + podTemplateHash}),
		Entry("a bare Pod is itself", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "kq").obj()
		}, kueuecontroller.Identity{Kind: "Pod", Namespace: "ops", Name: "kq"}),
		Entry("an owner that is not the controller is not followed", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "kq-0").owner("apps/v1", "StatefulSet", "kq", false).obj()
		}, kueuecontroller.Identity{Kind: "Pod", Namespace: "ops", Name: "kq-0"}),
		Entry("a Pod claiming a Deployment as its direct controller is itself", func() *unstructured.Unstructured {
			return makeObj("Pod", kueueNamespace, "p").owner("apps/v1", "Deployment", kueueDeployment, true).obj()
		}, kueuecontroller.Identity{Kind: "Pod", Namespace: kueueNamespace, Name: "p"}),
		Entry("a ReplicaSet owned by a Deployment of another group is itself", func() *unstructured.Unstructured {
			return makeObj("ReplicaSet", kueueNamespace, rsName).owner("example.com/v1", "Deployment", kueueDeployment, true).obj()
		}, kueuecontroller.Identity{Kind: "ReplicaSet", Namespace: kueueNamespace, Name: rsName}),
		Entry("a Pod of a Job is itself", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "job-abcde").owner("batch/v1", "Job", "job", true).obj()
		}, kueuecontroller.Identity{Kind: "Pod", Namespace: "ops", Name: "job-abcde"}),
		Entry("a Deployment owned by an operator is still itself", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "kq").owner("operator.example.com/v1", "Kueue", "cluster", true).obj()
		}, kueuecontroller.Identity{Kind: "Deployment", Namespace: "ops", Name: "kq"}),
		Entry("malformed owner references are ignored", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "p").field([]any{"rs", map[string]any{"kind": int64(1)}}, "metadata", "ownerReferences").obj()
		}, kueuecontroller.Identity{Kind: "Pod", Namespace: "ops", Name: "p"}),
		Entry("an owner reference whose controller flag is not a bool is not the controller", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "p").field([]any{map[string]any{
				"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "kq", "controller": "true",
			}}, "metadata", "ownerReferences").obj()
		}, kueuecontroller.Identity{Kind: "Pod", Namespace: "ops", Name: "p"}),
		Entry("nil is the zero identity", func() *unstructured.Unstructured { return nil }, kueuecontroller.Identity{}),
	)

	It("renders for messages", func() {
		Expect(kueueID.String()).To(Equal("Deployment kueue-system/kueue-controller-manager"))
	})
})
