package admission_test

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("workloads Kueue does not manage", func() {
	// Kueue manages pod-based workloads only in namespaces labelled kueue=managed;
	// both namespaces have a default queue.
	managedOnly := kueueConfigMap("batch/job", "pod", "deployment", "ray.io/rayjob")
	managedOnly.Data["controller_manager_config.yaml"] += "managedJobsNamespaceSelector:\n  matchLabels: {kueue: managed}\n"
	objs := func() []client.Object {
		return []client.Object{managedOnly,
			ns("plain", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("plain", "q"),
			ns("managed", map[string]string{"kueue": "managed"}, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("managed", "q")}
	}
	queueOf := func(req *guard.Request, d *guard.Decision) string {
		in, _ := integrations.Lookup(req.Kind.GroupKind())
		return workload.QueueName(result(req, d), in)
	}

	It("does not default a Pod outside Kueue's managedJobsNamespaceSelector, and says why", func() {
		req := create(fixtures.Pod("plain", "p").Obj())
		d := mutate(built(config.Default()), view(objs()...), req)
		Expect(queueOf(req, d)).To(BeEmpty())
		Expect(rules(d)).To(Equal([]string{guard.RuleKueueUnmanaged + "/warn"}))
		Expect(d.Warnings[0]).To(ContainSubstring(`Kueue does not manage Pods in namespace "plain"`))
		Expect(validate(built(config.Default()), view(objs()...), req).Allowed()).To(BeTrue(),
			"the backstop does not expect a queue Kueue would ignore")
	})

	It("does not gate a queued Pod there while Kueue is away: Kueue would never ungate it", func() {
		d := mutate(built(config.Default()), away{view(objs()...)}, create(fixtures.Pod("plain", "p").Queue("q").Obj()))
		Expect(rules(d)).NotTo(ContainElement(HavePrefix(guard.RuleKueueAbsent)))
		Expect(d.Patch).To(BeEmpty())
		d = mutate(built(config.Default()), away{view(objs()...)}, create(fixtures.Pod("managed", "p").Queue("q").Obj()))
		Expect(rules(d)).To(ContainElement(guard.RuleKueueAbsent+"/warn"), "where Kueue manages pods, it is gated")
	})

	It("defaults a Pod where Kueue manages pods", func() {
		req := create(fixtures.Pod("managed", "p").Obj())
		Expect(queueOf(req, mutate(built(config.Default()), view(objs()...), req))).To(Equal("q"))
	})

	It("still defaults a Job there: Kueue manages a labelled Job in any namespace", func() {
		req := create(fixtures.Job("plain", "j").Obj())
		Expect(queueOf(req, mutate(built(config.Default()), view(objs()...), req))).To(Equal("q"))
	})

	It("warns that a labelled Pod there runs outside quota", func() {
		d := validate(built(config.Default()), view(objs()...), create(fixtures.Pod("plain", "p").Queue("q").Obj()))
		Expect(rules(d)).To(Equal([]string{guard.RuleKueueUnmanaged + "/warn"}))
		Expect(d.Warnings[0]).To(ContainSubstring("runs outside quota"))
	})

	It("does not default a RayJob on an existing cluster (KubeRay refuses it with a queue)", func() {
		req := create(fixtures.RayJob("managed", "r").Set(map[string]any{"ray.io/cluster": "shared"}, "spec", "clusterSelector").Obj())
		d := mutate(built(config.Default()), view(objs()...), req)
		Expect(queueOf(req, d)).To(BeEmpty())
		Expect(d.Warnings[0]).To(ContainSubstring("spec.clusterSelector"))
	})
})

var _ = Describe("workloads Kueue holds without a queue", func() {
	It("warns instead of denying an unqueued workload when Kueue's manageJobsWithoutQueueName holds it", func() {
		cfg := config.Default()
		cfg.Defaulting.Unqueued = config.Unqueued{Action: config.UnqueuedDeny}
		req := create(fixtures.Job("free", "j").Obj())
		Expect(rules(validate(built(cfg), view(ns("free", nil, nil)), req))).To(Equal([]string{guard.RuleUnqueuedWorkload + "/deny"}))

		holds := kueueConfigMap("batch/job")
		holds.Data["controller_manager_config.yaml"] += "manageJobsWithoutQueueName: true\n"
		// Kueue's webhook suspends it, as the API server then sends it.
		held := create(fixtures.Job("free", "j").Set(true, "spec", "suspend").Obj())
		d := validate(built(cfg), view(holds, ns("free", nil, nil)), held)
		Expect(rules(d)).To(Equal([]string{guard.RuleUnqueuedWorkload + "/warn"}))
		Expect(d.Warnings[0]).To(ContainSubstring("Kueue holds it"))
	})
})
