package integration

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// namespace creates a namespace with a generated name and waits until the
// server's cache has it, so a following admission sees its defaults.
func namespace(labels, annotations map[string]string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "it-", Labels: labels, Annotations: annotations}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// extraServer starts a second kueue-guard, without Kueue's configuration and
// with an empty policy directory, on ports of its own, with tune applied to
// its options; it stops when the spec ends.
func extraServer(tune func(o *server.Options)) *testenv.Server {
	cfg := testenv.ConfigWithoutKueue()
	cfg.Policies.Directory = GinkgoT().TempDir()
	port, err := testenv.FreePort()
	Expect(err).NotTo(HaveOccurred())
	s, err := env.StartServerOptions(ctx, env.Config, cfg, func(o *server.Options) {
		o.WebhookPort = port
		tune(o)
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.Stop)
	return s
}

// localQueue creates a LocalQueue.
func localQueue(ns, name string) {
	lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kueue.LocalQueueSpec{ClusterQueue: "cq"}}
	Expect(k8sClient.Create(ctx, lq)).To(Succeed())
}

func integrationOf(obj *unstructured.Unstructured) *integrations.Integration {
	in, ok := integrations.Lookup(obj.GroupVersionKind().GroupKind())
	Expect(ok).To(BeTrue(), "not a catalog kind: %s", obj.GroupVersionKind())
	return in
}

func queueOf(obj *unstructured.Unstructured) string {
	return workload.QueueName(obj, integrationOf(obj))
}

func defaultedBy(obj *unstructured.Unstructured) string {
	m, _, _ := unstructured.NestedStringMap(obj.Object, integrationOf(obj).AnnotationsPath()...)
	return m["kueue-guard.io/defaulted-by"]
}

func priorityOf(obj *unstructured.Unstructured) string {
	return workload.PriorityClass(obj, integrationOf(obj))
}
