package integration

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tenantWithWarnings is a client acting as a namespace user whose admission
// warnings the test reads.
func tenantWithWarnings() (client.Client, *testenv.Warnings) {
	w := &testenv.Warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:masters", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c, w
}

// Kueue manages pod-based workloads only in namespaces labelled kueue=managed,
// and holds workloads that have no queue there (manageJobsWithoutQueueName).
// kueue-guard reads that from Kueue's ConfigMap in the cluster.
var _ = Describe("following Kueue's managed namespaces", Ordered, func() {
	var plain, managed, bare string

	BeforeAll(func() {
		cfg := suiteConfig()
		// The platform says nothing may run outside Kueue in strict namespaces.
		cfg.Defaulting.Unqueued = config.Unqueued{Action: config.UnqueuedDeny,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"strict": "true"}}}
		Expect(cfg.Validate()).To(BeEmpty())
		startServer(cfg)
		DeferCleanup(func() { startServer(suiteConfig()) })

		ensureNamespace(cluster.DefaultKueueNamespace)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.DefaultKueueNamespace, Name: cluster.KueueDefaultConfigMapName},
			Data: map[string]string{cluster.KueueConfigKey: "integrations:\n  frameworks: [batch/job, pod, ray.io/rayjob]\n" +
				"manageJobsWithoutQueueName: true\nmanagedJobsNamespaceSelector:\n  matchLabels: {kueue: managed}\n"}}
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, cm))).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data[cluster.KueueConfigKey] = "integrations:\n  frameworks: [batch/job, pod, ray.io/rayjob]\n" +
			"manageJobsWithoutQueueName: true\nmanagedJobsNamespaceSelector:\n  matchLabels: {kueue: managed}\n"
		Expect(k8sClient.Update(ctx, cm)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cm))).To(Succeed()) })

		withDefault := map[string]string{admission.DefaultQueueAnnotation: "q"}
		plain = namespace(nil, withDefault)
		managed = namespace(map[string]string{"kueue": "managed"}, withDefault)
		bare = namespace(map[string]string{"kueue": "managed", "strict": "true"}, nil)
		for _, ns := range []string{plain, managed} {
			localQueue(ns, "q")
		}
	})

	queueOf := func(c client.Client, obj *unstructured.Unstructured) string {
		GinkgoHelper()
		got := obj.DeepCopy()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		return got.GetLabels()[integrations.QueueNameLabel]
	}

	It("does not put a tenant's Pod into a queue Kueue would ignore, and says why", func() {
		c, warnings := tenantWithWarnings()
		pod := fixtures.Pod(plain, "outside").Obj()
		// The webhook reads Kueue's ConfigMap from its cache: wait until it has it.
		Eventually(func(g Gomega) {
			p := pod.DeepCopy()
			p.SetName("probe")
			g.Expect(c.Create(ctx, p, client.DryRunAll)).To(Succeed())
			g.Expect(p.GetLabels()).NotTo(HaveKey(integrations.QueueNameLabel))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		Expect(c.Create(ctx, pod)).To(Succeed())
		Expect(queueOf(k8sClient, pod)).To(BeEmpty())
		Expect(warnings.All()).To(ContainSubstring(`Kueue does not manage Pods in namespace "` + plain + `"`))

		By("where Kueue manages pods, the same Pod is defaulted")
		inside := fixtures.Pod(managed, "inside").Obj()
		Expect(c.Create(ctx, inside)).To(Succeed())
		Expect(queueOf(k8sClient, inside)).To(Equal("q"))
	})

	It("warns that a labelled Pod Kueue ignores runs outside quota", func() {
		c, warnings := tenantWithWarnings()
		Expect(c.Create(ctx, fixtures.Pod(plain, "labelled").Queue("q").Obj(), client.DryRunAll)).To(Succeed())
		Expect(warnings.All()).To(ContainSubstring("runs outside quota"))
	})

	It("admits an unqueued Job Kueue holds (manageJobsWithoutQueueName), and denies it where Kueue does not hold it", func() {
		c, warnings := tenantWithWarnings()
		Expect(c.Create(ctx, fixtures.Job(bare, "held").Obj(), client.DryRunAll)).To(Succeed())
		Expect(warnings.All()).To(ContainSubstring("Kueue holds it (manageJobsWithoutQueueName)"))

		unmanaged := namespace(map[string]string{"strict": "true"}, nil)
		invalid(c.Create(ctx, fixtures.Job(unmanaged, "loose").Obj(), client.DryRunAll),
			"metadata.labels[kueue.x-k8s.io/queue-name]", "["+admission.RuleUnqueuedWorkload+"]")

		By("a Pod there is refused for the right reason: no queue would make Kueue manage it")
		invalid(c.Create(ctx, fixtures.Pod(unmanaged, "loose").Obj(), client.DryRunAll),
			"metadata.labels[kueue.x-k8s.io/queue-name]", `Kueue does not manage Pods in namespace "`+unmanaged+`"`)
	})

	It("does not put a RayJob on an existing cluster into a queue (Kueue does not manage it)", func() {
		c, warnings := tenantWithWarnings()
		rj := fixtures.RayJob(managed, "on-shared").Set(map[string]any{"ray.io/cluster": "shared"}, "spec", "clusterSelector").Obj()
		unstructured.RemoveNestedField(rj.Object, "spec", "rayClusterSpec")
		Expect(c.Create(ctx, rj)).To(Succeed())
		Expect(queueOf(k8sClient, rj)).To(BeEmpty())
		Expect(warnings.All()).To(ContainSubstring("spec.clusterSelector"))
	})
})
