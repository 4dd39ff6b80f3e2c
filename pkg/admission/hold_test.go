package admission_test

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kueueFirst is a view in which Kueue's webhook runs before kueue-guard's.
type kueueFirst struct{ cluster.View }

func (kueueFirst) KueueWebhooksFirst() []string {
	return []string{"aks-kueue-mutating-webhook-configuration"}
}

func workloadDecision(p *guard.Pipeline, v cluster.View, req *guard.Request) *guard.Decision {
	d, err := p.Workload(context.Background(), req, v)
	Expect(err).NotTo(HaveOccurred())
	return d
}

func heldAfter(req *guard.Request, d *guard.Decision) bool {
	in, _ := integrations.Lookup(req.Kind.GroupKind())
	held, _ := workload.Held(result(req, d), in)
	return held
}

var _ = Describe("Kueue's hold", func() {
	objs := func() []client.Object {
		return []client.Object{ns("owed", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("owed", "q")}
	}

	It("is set by the mutating path on a defaulted workload, and the order problem is named", func() {
		req := as(create(fixtures.Job("owed", "j").Obj()), tenantID)
		d := workloadDecision(built(config.Default()), kueueFirst{view(objs()...)}, req)
		Expect(d.Allowed()).To(BeTrue(), "%v", d.Violations)
		Expect(heldAfter(req, d)).To(BeTrue())
		Expect(d.Warnings).To(ContainElement(ContainSubstring("aks-kueue-mutating-webhook-configuration")))
		Expect(d.Warnings).To(ContainElement(ContainSubstring("webhooks.mutatingName")))
	})

	It("is left to Kueue's webhook where it runs after ours and sees the requester's queue: the fast path", func() {
		p, v := built(config.Default()), view(objs()...)
		req := as(create(fixtures.Job("owed", "j").Queue("q").Obj()), tenantID)
		Expect(p.MutateSettled(guard.Envelope{Operation: admissionv1.Create, Kind: req.Kind.GroupKind(), Namespace: "owed"},
			req.Object.GetLabels(), v)).To(BeTrue())
		Expect(mutate(p, v, req).Patch).To(BeEmpty())
		defaulted := as(create(fixtures.Job("owed", "j").Obj()), tenantID)
		d := mutate(p, v, defaulted)
		Expect(heldAfter(defaulted, d)).To(BeTrue(), "what kueue-guard labels, it holds: the order cannot matter")
	})

	It("warns about the order only where Kueue could not see the queue", func() {
		d := workloadDecision(built(config.Default()), kueueFirst{view(objs()...)}, as(create(fixtures.Job("owed", "j").Queue("q").Obj()), tenantID))
		Expect(d.Warnings).NotTo(ContainElement(ContainSubstring("webhooks.mutatingName")))
	})

	It("is checked on the validating path: a queued workload that arrives running is refused, and says why", func() {
		d := validateUnheld(built(config.Default()), kueueFirst{view(objs()...)},
			as(create(fixtures.Job("owed", "j").Queue("q").Set(false, "spec", "suspend").Obj()), tenantID))
		Expect(rules(d)).To(Equal([]string{guard.RuleNotHeld + "/deny"}))
		Expect(d.Denials()[0].Message).To(And(ContainSubstring("spec.suspend is not true"), ContainSubstring("run before kueue-guard's")))
	})

	It("tells a controller whose template Kueue never marked to have its parent applied again", func() {
		pod := fixtures.Pod("owed", "p").Queue("q").ControlledBy("apps/v1", "ReplicaSet", "web-1").Obj()
		d := validateUnheld(built(config.Default()), view(objs()...),
			as(create(pod), "system:serviceaccount:kube-system:replicaset-controller"))
		Expect(rules(d)).To(Equal([]string{guard.RuleNotHeld + "/deny"}))
		Expect(d.Denials()[0].Message).To(ContainSubstring("apply its parent again"))
	})

	It("is not set where Kueue ignores the workload: nothing would release it", func() {
		kueueCfg := kueueConfigMap("pod")
		kueueCfg.Data["controller_manager_config.yaml"] += "managedJobsNamespaceSelector:\n  matchLabels: {kueue: managed}\n"
		req := as(create(fixtures.Pod("owed", "p").Queue("q").Obj()), tenantID)
		d := workloadDecision(built(config.Default()), view(append(objs(), kueueCfg)...), req)
		Expect(heldAfter(req, d)).To(BeFalse())
		Expect(rules(d)).NotTo(ContainElement(guard.RuleNotHeld + "/deny"))
	})
})

var _ = Describe("only Kueue releases", func() {
	v := func() cluster.View { return view(ns("t", nil, nil), lq("t", "q")) }
	gate := []any{map[string]any{"name": integrations.KueueAdmissionGate}}

	DescribeTable("a tenant's update",
		func(old, new *unstructured.Unstructured, user string, want []string) {
			Expect(rules(validate(built(config.Default()), v(), as(update(old, new), user)))).To(Equal(want))
		},
		Entry("resuming a queued Job", fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Obj(),
			fixtures.Job("t", "j").Queue("q").Set(false, "spec", "suspend").Obj(), tenantID,
			[]string{guard.RuleOnlyKueueReleases + "/deny"}),
		Entry("Kueue resuming it", fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Obj(),
			fixtures.Job("t", "j").Queue("q").Set(false, "spec", "suspend").Obj(), kueueSA, nil),
		Entry("removing Kueue's gate from a queued Pod", fixtures.Pod("t", "p").Queue("q").Set(gate, "spec", "schedulingGates").Obj(),
			fixtures.Pod("t", "p").Queue("q").Obj(), tenantID, []string{guard.RuleOnlyKueueReleases + "/deny"}),
		Entry("removing the managed label from a Pod", fixtures.Pod("t", "p").Queue("q").Label("kueue.x-k8s.io/managed", "true").Obj(),
			fixtures.Pod("t", "p").Queue("q").Obj(), tenantID, []string{guard.RuleKueueMarker + "/deny"}),
		Entry("removing a Deployment template's parent annotation", fixtures.Deployment("t", "d").Queue("q").
			Set("deployment", "spec", "template", "metadata", "annotations", "kueue.x-k8s.io/pod-suspending-parent").Obj(),
			fixtures.Deployment("t", "d").Queue("q").Obj(), tenantID, []string{guard.RuleKueueMarker + "/deny"}),
		Entry("naming an admitted Workload", fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Obj(),
			fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Label("kueue.x-k8s.io/prebuilt-workload-name", "w").Obj(),
			tenantID, []string{guard.RuleKueueMarker + "/deny"}),
		Entry("editing anything else", fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Obj(),
			fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Label("team", "x").Obj(), tenantID, nil),
	)

	DescribeTable("a tenant's new object with Kueue's markers",
		func(obj *unstructured.Unstructured, want []string) {
			Expect(rules(validate(built(config.Default()), v(), as(create(obj), tenantID)))).To(Equal(want))
		},
		Entry("a queued Pod marked managed, as Kueue marks it", fixtures.Pod("t", "p").Queue("q").Label("kueue.x-k8s.io/managed", "true").Obj(), nil),
		Entry("an unqueued Pod marked managed", fixtures.Pod("t", "p").Label("kueue.x-k8s.io/managed", "true").Obj(),
			[]string{guard.RuleKueueMarker + "/deny"}),
		Entry("a Pod claiming a parent", fixtures.Pod("t", "p").Queue("q").Set("deployment", "metadata", "annotations", "kueue.x-k8s.io/pod-suspending-parent").Obj(),
			[]string{guard.RuleKueueMarker + "/deny"}),
		Entry("a Job naming a Workload", fixtures.Job("t", "j").Queue("q").Label("kueue.x-k8s.io/prebuilt-workload-name", "w").Obj(),
			[]string{guard.RuleKueueMarker + "/deny"}),
		Entry("a MultiKueue copy", fixtures.StatefulSet("t", "s").Queue("q").Label("kueue.x-k8s.io/multikueue-origin", "o").Obj(),
			[]string{guard.RuleKueueMarker + "/deny"}),
		Entry("a pod group's own labels, which users write", fixtures.Pod("t", "p").Queue("q").Label("kueue.x-k8s.io/pod-group-name", "g").
			Set("2", "metadata", "annotations", "kueue.x-k8s.io/pod-group-total-count").Obj(), nil),
	)
})

var _ = Describe("a ReplicaSet under a workload Kueue manages", func() {
	rs := func(owner string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"})
		o.SetNamespace("t")
		o.SetName("rs")
		return fixtures.Object{Unstructured: o}.ControlledBy("batch/v1", owner, "small").Obj()
	}
	DescribeTable("is only the controllers'",
		func(obj *unstructured.Unstructured, user, namespace string, denied bool) {
			obj.SetNamespace(namespace)
			req := as(controllerRequest(obj, admissionv1.Create), user)
			Expect(rules(validate(built(config.Default()), view(), req))).To(
				Equal(map[bool][]string{true: {guard.RuleUntrustedOwner + "/deny"}, false: nil}[denied]))
		},
		Entry("a tenant's ReplicaSet under their Job", rs("Job"), tenantID, "t", true),
		Entry("a tenant's ReplicaSet under a CronJob (whose Jobs Kueue holds one by one)", rs("CronJob"), tenantID, "t", false),
		Entry("a tenant's ReplicaSet under another ReplicaSet (Kueue walks through both)",
			fixtures.Object{Unstructured: func() *unstructured.Unstructured { o := rs("Job"); o.SetOwnerReferences(nil); return o }()}.
				ControlledBy("apps/v1", "ReplicaSet", "web-1").Obj(), tenantID, "t", true),
		Entry("a controller's", rs("Job"), "system:serviceaccount:kube-system:replicaset-controller", "t", false),
		Entry("in a system namespace", rs("Job"), tenantID, "kube-system", false),
	)
})

var _ = Describe("the hold property", func() {
	// For every catalog kind, and what a tenant can write into it (owners,
	// Kueue's markers, queue labels), the pipeline either refuses the new
	// object or leaves it held as Kueue holds it: never stored running in a
	// namespace whose workloads are queued.
	owners := map[string][2]string{"none": {}, "managed": {"batch/v1", "Job"}, "interim": {"apps/v1", "ReplicaSet"},
		"other": {"example.com/v1", "Thing"}}
	markers := map[string][2]string{"none": {}, "managed": {"kueue.x-k8s.io/managed", "true"},
		"prebuilt": {"kueue.x-k8s.io/prebuilt-workload-name", "w"}, "origin": {"kueue.x-k8s.io/multikueue-origin", "x"}}
	queues := []string{"", "q", "held"}

	It("holds for every combination", func() {
		// Every kind enabled: the property is about holds, not integrations.
		cfg := config.Default()
		cfg.InstallProfile = config.ProfileOSS
		cfg.Integrations.Frameworks = integrations.Frameworks()
		p := built(cfg)
		v := kueueFirst{view(ns("owed", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("owed", "q"), lq("owed", "held"))}
		n := 0
		for _, base := range fixtures.EveryKind("owed") {
			in, _ := integrations.Lookup(base.GroupVersionKind().GroupKind())
			if !workload.Holdable(in) {
				continue
			}
			for ownerName, owner := range owners {
				for markerName, marker := range markers {
					for _, q := range queues {
						o := fixtures.Object{Unstructured: base.DeepCopy()}
						if owner[0] != "" {
							o = o.ControlledBy(owner[0], owner[1], "small")
						}
						if marker[0] != "" {
							o = o.Label(marker[0], marker[1])
						}
						if q != "" {
							o = o.Queue(q)
						}
						req := as(create(o.Obj()), tenantID)
						d := workloadDecision(p, v, req)
						what := fmt.Sprintf("%s owner=%s marker=%s queue=%q: %v", in.GVK.Kind, ownerName, markerName, q, d.Violations)
						Expect(!d.Allowed() || heldAfter(req, d)).To(BeTrue(), what)
						if ownerName == "none" && markerName == "none" {
							// ...and what a tenant may write is held, not refused.
							Expect(d.Allowed()).To(BeTrue(), what)
						}
						n++
					}
				}
			}
		}
		Expect(n).To(BeNumerically(">", 500))
	})
})

var _ = Describe("a trusted operator's child of a parent Kueue may ignore", func() {
	const kuberay = "system:serviceaccount:ray-system:kuberay-operator"
	rayJob := func(name, uid string, clusterSelector bool, queue string) *unstructured.Unstructured {
		o := fixtures.RayJob("owed", name)
		if queue != "" {
			o = o.Queue(queue)
		}
		if clusterSelector {
			o = o.Set(map[string]any{"ray.io/cluster": "shared"}, "spec", "clusterSelector")
		}
		obj := o.Obj()
		obj.SetUID(types.UID(uid))
		return obj
	}
	submitter := func(owner string) *guard.Request {
		obj := fixtures.Job("owed", "submitter").ControlledBy("ray.io/v1", "RayJob", owner).Obj()
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: owner,
			UID: "uid-" + types.UID(owner), Controller: new(true)}})
		return as(create(obj), kuberay)
	}
	v := func() cluster.View {
		return view(ns("owed", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("owed", "q"),
			rayJob("managed", "uid-managed", false, "q"), rayJob("on-cluster", "uid-on-cluster", true, ""),
			rayJob("unqueued", "uid-unqueued", false, ""), rayJob("stale", "another-uid", false, "q"))
	}

	DescribeTable("is part of its parent only where Kueue manages the parent",
		func(owner string, judged bool) {
			req := submitter(owner)
			d := workloadDecision(built(config.Default()), v(), req)
			Expect(d.Allowed()).To(BeTrue(), "%v", d.Violations)
			if !judged {
				Expect(d.Patch).To(BeEmpty(), "left to its parent, as Kueue counts it")
				return
			}
			out := result(req, d)
			Expect(out.GetLabels()).To(HaveKeyWithValue(integrations.QueueNameLabel, "q"), "queued as a workload of its own")
			Expect(heldAfter(req, d)).To(BeTrue())
		},
		Entry("a RayJob Kueue manages", "managed", false),
		Entry("a RayJob on an existing cluster, which Kueue ignores", "on-cluster", true),
		Entry("a RayJob without a queue, which Kueue does not manage", "unqueued", true),
		Entry("a RayJob that is not the one the reference names", "stale", true),
	)

	It("is refused, to be retried, while its parent is not in the cache, as Kueue's webhook refuses it", func() {
		_, err := built(config.Default()).Workload(context.Background(), submitter("ghost"), v())
		Expect(err).To(MatchError(ContainSubstring("has not seen RayJob owed/ghost")))
	})
})
