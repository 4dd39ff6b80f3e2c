package admission_test

import (
	"context"
	"os"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func built(cfg *config.Configuration) *guard.Pipeline {
	Expect(cfg.Validate()).To(BeEmpty())
	p, err := guard.Build(cfg, "kueue-guard-system")
	Expect(err).NotTo(HaveOccurred())
	return p
}

// validate runs the validating path on a request as the API server sends it
// there: a new queued workload already held, as Kueue's webhook holds it
// (validateUnheld skips that).
func validate(p *guard.Pipeline, v cluster.View, req *guard.Request) *guard.Decision {
	if in, ok := integrations.Lookup(req.Kind.GroupKind()); ok && req.Operation == admissionv1.Create &&
		workload.QueueName(req.Object, in) != "" && workload.Holdable(in) && guard.KueueIgnores(req.Object, req.Namespace, in, v) == "" {
		held := *req
		held.Object = req.Object.DeepCopy()
		_, err := workload.Hold(held.Object, in)
		Expect(err).NotTo(HaveOccurred())
		req = &held
	}
	return validateUnheld(p, v, req)
}

func validateUnheld(p *guard.Pipeline, v cluster.View, req *guard.Request) *guard.Decision {
	d, err := p.Validate(context.Background(), req, v)
	Expect(err).NotTo(HaveOccurred())
	return d
}

func update(old, new *unstructured.Unstructured) *guard.Request {
	r := create(new)
	r.Operation = admissionv1.Update
	r.OldObject = old
	return r
}

func kueueConfigMap(frameworks ...string) *corev1.ConfigMap {
	data := "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
	if len(frameworks) > 0 {
		data += "integrations:\n  frameworks:\n  - " + strings.Join(frameworks, "\n  - ") + "\n"
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: "kueue-manager-config"},
		Data: map[string]string{cluster.KueueConfigKey: data}}
}

func rules(d *guard.Decision) []string {
	var out []string
	for _, v := range d.Violations {
		out = append(out, v.Rule+"/"+string(v.Enforcement))
	}
	return out
}

var _ = Describe("the integration guard", func() {
	nsWithQueue := func() []client.Object { return []client.Object{ns("a", nil, nil), lq("a", "q")} }

	DescribeTable("under managed, a queued workload of an unsupported kind is denied",
		func(build func(ns, name string) fixtures.Object, denied bool) {
			p := built(config.Default())
			d := validate(p, view(nsWithQueue()...), create(build("a", "w").Queue("q").Obj()))
			Expect(d.Allowed()).To(Equal(!denied))
		},
		Entry("AppWrapper", fixtures.AppWrapper, true),
		Entry("LeaderWorkerSet", fixtures.LeaderWorkerSet, true),
		Entry("PyTorchJob", fixtures.PyTorchJob, true),
		Entry("JobSet", fixtures.JobSet, false),
		Entry("RayJob", fixtures.RayJob, false),
		Entry("MPIJob", fixtures.MPIJob, false),
		Entry("TrainJob", fixtures.TrainJob, false),
		Entry("Job", fixtures.Job, false),
		Entry("CronJob (its Jobs are batch/job)", fixtures.CronJob, false),
	)

	It("says what, why, and what to use instead", func() {
		d := validate(built(config.Default()), view(nsWithQueue()...), create(fixtures.AppWrapper("a", "w").Queue("q").Obj()))
		Expect(d.Denials()).To(ConsistOf(guard.Violation{
			Rule: guard.RuleUnsupportedIntegration, Field: fieldpath.Parse("metadata.labels[kueue.x-k8s.io/queue-name]"),
			Enforcement: guard.EnforcementDeny,
			Message: "AppWrapper (workload.codeflare.dev/appwrapper) is not supported by the managed Kueue install: " +
				"Kueue will not manage it, so it would run outside quota; use JobSet (jobset.x-k8s.io/v1alpha2) instead",
		}))
		d = validate(built(config.Default()), view(nsWithQueue()...), create(fixtures.PyTorchJob("a", "w").Queue("q").Obj()))
		Expect(d.Denials()[0].Message).To(HaveSuffix("use TrainJob (trainer.kubeflow.org/v1alpha1) instead"))
	})

	It("judges an update only when it changes the queue, so an unsupported object can still be cleaned up", func() {
		old := fixtures.AppWrapper("a", "w").Queue("q").Obj()
		old.SetFinalizers([]string{"workload.codeflare.dev/finalizer"})
		cleaned := fixtures.AppWrapper("a", "w").Queue("q").Obj()
		Expect(validate(built(config.Default()), view(nsWithQueue()...), update(old, cleaned)).Allowed()).To(BeTrue(),
			"its controller removing a finalizer")
		requeued := fixtures.AppWrapper("a", "w").Queue("other").Obj()
		d := validate(built(config.Default()), view(append(nsWithQueue(), lq("a", "other"))...), update(old, requeued))
		Expect(rules(d)).To(ContainElement(guard.RuleUnsupportedIntegration+"/deny"), "a change of queue is judged")
	})

	It("never denies the update of an object being deleted, by the stored object's deletion mark", func() {
		old := fixtures.AppWrapper("a", "w").Queue("q").Obj()
		requeued := fixtures.AppWrapper("a", "w").Queue("other").Obj()
		v := view(append(nsWithQueue(), lq("a", "other"))...)
		// The mark in the new object alone is not believed: the API server
		// keeps the stored one, and only a DELETE sets it.
		now := metav1.Now()
		requeued.SetDeletionTimestamp(&now)
		Expect(rules(validate(built(config.Default()), v, update(old, requeued)))).To(ContainElement(guard.RuleUnsupportedIntegration + "/deny"))
		old.SetDeletionTimestamp(&now)
		Expect(rules(validate(built(config.Default()), v, update(old, requeued)))).NotTo(ContainElement(HavePrefix(guard.RuleUnsupportedIntegration)))
	})

	It("leaves workloads that are not Kueue workloads alone", func() {
		d := validate(built(config.Default()), view(ns("a", nil, nil)), create(fixtures.AppWrapper("a", "w").Obj()))
		Expect(d.Violations).To(BeEmpty())
	})

	It("also guards a workload that would get a queue from defaulting", func() {
		v := view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q"))
		d := validate(built(config.Default()), v, create(fixtures.LeaderWorkerSet("a", "w").Obj()))
		Expect(d.Allowed()).To(BeFalse())
	})

	// Kueue does not integrate these kinds, so it never holds or resumes them:
	// they arrive as written, and kueue-guard must not hold them for Kueue
	// either (nothing would ever release them), nor demand that they be held.
	It("warns instead with integrations.action warn, in under 120 characters, and leaves them unheld", func() {
		cfg := config.Default()
		cfg.Integrations.Action = config.IntegrationActionWarn
		for _, build := range []func(string, string) fixtures.Object{fixtures.AppWrapper, fixtures.PyTorchJob, fixtures.LeaderWorkerSet} {
			for _, v := range []cluster.View{view(nsWithQueue()...), away{view(nsWithQueue()...)}} {
				req := create(build("a", "w").Queue("q").Obj())
				Expect(mutate(built(cfg), v, req).Patch).To(BeEmpty(), build("a", "w").GetKind())
				d := validateUnheld(built(cfg), v, req)
				Expect(d.Allowed()).To(BeTrue(), "%s: %v", build("a", "w").GetKind(), d.Denials())
				Expect(d.Warnings).To(HaveLen(1))
				Expect(len(d.Warnings[0])).To(BeNumerically("<", 120), d.Warnings[0])
			}
		}
	})

	It("gives one cause for an unsupported kind: the kind, not its hold", func() {
		d := validateUnheld(built(config.Default()), view(nsWithQueue()...), create(fixtures.AppWrapper("a", "w").Queue("q").Obj()))
		Expect(rules(d)).To(Equal([]string{guard.RuleUnsupportedIntegration + "/deny"}))
	})

	It("lets the requester resume a queued workload of an unsupported kind: Kueue never will", func() {
		cfg := config.Default()
		cfg.Integrations.Action = config.IntegrationActionWarn
		old := fixtures.AppWrapper("a", "w").Queue("q").Set(true, "spec", "suspend").Obj()
		resumed := old.DeepCopy()
		Expect(unstructured.SetNestedField(resumed.Object, false, "spec", "suspend")).To(Succeed())
		Expect(validate(built(cfg), view(nsWithQueue()...), update(old, resumed)).Denials()).To(BeEmpty())
	})

	Describe("under oss", func() {
		oss := func() *config.Configuration {
			cfg := config.Default()
			cfg.InstallProfile = config.ProfileOSS
			cfg.Controllers.Allowed = nil
			return cfg
		}

		It("reads Kueue's own Configuration", func() {
			v := view(append(nsWithQueue(), kueueConfigMap("batch/job"))...)
			d := validate(built(oss()), v, create(fixtures.JobSet("a", "w").Queue("q").Obj()))
			Expect(d.Allowed()).To(BeFalse())
			Expect(d.Denials()[0].Message).To(ContainSubstring(
				`JobSet (jobset.x-k8s.io/jobset) is not enabled in Kueue's integrations.frameworks (ConfigMap in kueue-system)`))
			Expect(d.Denials()[0].Message).To(ContainSubstring(`ask an admin to enable "jobset.x-k8s.io/jobset"`))

			v = view(append(nsWithQueue(), kueueConfigMap("batch/job", "jobset.x-k8s.io/jobset"))...)
			Expect(validate(built(oss()), v, create(fixtures.JobSet("a", "w").Queue("q").Obj())).Allowed()).To(BeTrue())
		})

		It("applies Kueue's default (batch/job only) when the Configuration lists none", func() {
			v := view(append(nsWithQueue(), kueueConfigMap())...)
			Expect(validate(built(oss()), v, create(fixtures.Job("a", "w").Queue("q").Obj())).Allowed()).To(BeTrue())
			Expect(validate(built(oss()), v, create(fixtures.RayJob("a", "w").Queue("q").Obj())).Allowed()).To(BeFalse())
		})

		It("prefers an explicit list in kueue-guard's configuration", func() {
			cfg := oss()
			cfg.Integrations.Frameworks = []string{"ray.io/rayjob"}
			v := view(append(nsWithQueue(), kueueConfigMap("batch/job"))...)
			Expect(validate(built(cfg), v, create(fixtures.RayJob("a", "w").Queue("q").Obj())).Allowed()).To(BeTrue())
		})

		It("accepts external frameworks in Kueue's Kind.version.group form", func() {
			cm := kueueConfigMap("batch/job")
			cm.Data[cluster.KueueConfigKey] += "  externalFrameworks:\n  - AppWrapper.v1beta2.workload.codeflare.dev\n"
			v := view(append(nsWithQueue(), cm)...)
			Expect(validate(built(oss()), v, create(fixtures.AppWrapper("a", "w").Queue("q").Obj())).Allowed()).To(BeTrue())
		})

		It("does not guess when Kueue's Configuration cannot be found", func() {
			Expect(validate(built(oss()), view(nsWithQueue()...), create(fixtures.JobSet("a", "w").Queue("q").Obj())).Allowed()).To(BeTrue())
		})
	})
})

var _ = Describe("queue checks", func() {
	hold := kueue.Hold

	It("warns about a LocalQueue that does not exist", func() {
		d := validate(built(config.Default()), view(ns("a", nil, nil)), create(fixtures.Job("a", "w").Queue("nope").Obj()))
		Expect(d.Warnings).To(ConsistOf(`LocalQueue "nope" not found in namespace "a": the workload stays pending until it exists`))
	})

	It("does not repeat the mutating path's warning for a queue it defaulted", func() {
		obj := fixtures.Job("a", "w").Queue("nope").Obj()
		obj.SetAnnotations(map[string]string{guard.DefaultedByAnnotation: "namespace-annotation"})
		Expect(validate(built(config.Default()), view(ns("a", nil, nil)), create(obj)).Warnings).To(BeEmpty())
	})

	It("denies with missingLocalQueue deny", func() {
		cfg := config.Default()
		cfg.Defaulting.MissingLocalQueue = config.MissingLocalQueueDeny
		d := validate(built(cfg), view(ns("a", nil, nil)), create(fixtures.Job("a", "w").Queue("nope").Obj()))
		Expect(rules(d)).To(ConsistOf("kueue_guard.missing_local_queue/deny"))
	})

	It("warns when the ClusterQueue is on hold", func() {
		q := lq("a", "q")
		q.Spec.ClusterQueue = "cq"
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "cq"}, Spec: kueue.ClusterQueueSpec{StopPolicy: &hold}}
		d := validate(built(config.Default()), view(ns("a", nil, nil), q, cq), create(fixtures.Job("a", "w").Queue("q").Obj()))
		Expect(d.Warnings).To(ConsistOf(`ClusterQueue "cq" is on hold (stopPolicy Hold): nothing is admitted until it resumes`))
	})

	It("does not repeat warnings on updates that keep the queue", func() {
		obj := fixtures.Job("a", "w").Queue("nope").Obj()
		d := validate(built(config.Default()), view(ns("a", nil, nil)), update(obj.DeepCopy(), obj))
		Expect(d.Violations).To(BeEmpty())
	})
})

var _ = Describe("queue-name immutability", func() {
	running := func(o fixtures.Object) *unstructured.Unstructured { return o.Obj() }
	suspended := func(o fixtures.Object, path ...string) *unstructured.Unstructured {
		obj := o.Obj()
		Expect(unstructured.SetNestedField(obj.Object, true, path...)).To(Succeed())
		return obj
	}
	v := view(ns("a", nil, nil), lq("a", "q"), lq("a", "other"))

	DescribeTable("follows Kueue's rule for each kind",
		func(old, new *unstructured.Unstructured, denied bool) {
			d := validate(built(config.Default()), v, update(old, new))
			if denied {
				Expect(rules(d)).To(ContainElement("kueue_guard.immutable_queue_name/deny"))
			} else {
				Expect(rules(d)).NotTo(ContainElement("kueue_guard.immutable_queue_name/deny"))
			}
		},
		Entry("a running Job cannot change queue", running(fixtures.Job("a", "j").Queue("q")),
			running(fixtures.Job("a", "j").Queue("other")), true),
		Entry("a running Job cannot drop its queue", running(fixtures.Job("a", "j").Queue("q")),
			running(fixtures.Job("a", "j")), true),
		Entry("a suspended Job may change queue", running(fixtures.Job("a", "j").Queue("q")),
			suspended(fixtures.Job("a", "j").Queue("other"), "spec", "suspend"), false),
		Entry("a running MPIJob (runPolicy.suspend false) cannot", running(fixtures.MPIJob("a", "m").Queue("q")),
			running(fixtures.MPIJob("a", "m").Queue("other")), true),
		Entry("a suspended MPIJob may", running(fixtures.MPIJob("a", "m").Queue("q")),
			suspended(fixtures.MPIJob("a", "m").Queue("other"), "spec", "runPolicy", "suspend"), false),
		Entry("a Deployment with no ready replicas may", running(fixtures.Deployment("a", "d").Queue("q")),
			running(fixtures.Deployment("a", "d").Queue("other")), false),
		Entry("a CronJob's template queue may always change", running(fixtures.CronJob("a", "c").Queue("q")),
			running(fixtures.CronJob("a", "c").Queue("other")), false),
		Entry("an unchanged queue is fine", running(fixtures.Job("a", "j").Queue("q")),
			running(fixtures.Job("a", "j").Queue("q")), false),
		Entry("a LeaderWorkerSet never may, even with no ready replicas (Kueue's rule for it)",
			running(fixtures.LeaderWorkerSet("a", "l").Queue("q")), running(fixtures.LeaderWorkerSet("a", "l").Queue("other")), true),
		Entry("a running Pod cannot", running(fixtures.Pod("a", "p").Queue("q")), running(fixtures.Pod("a", "p").Queue("other")), true),
		Entry("a terminated Pod may: Kueue counts it as suspended", running(fixtures.Pod("a", "p").Queue("q")),
			running(fixtures.Pod("a", "p").Queue("other").Set("Succeeded", "status", "phase")), false),
	)

	It("treats a Deployment with ready replicas as running, and says how to change it", func() {
		old := fixtures.Deployment("a", "d").Queue("q").Obj()
		Expect(unstructured.SetNestedField(old.Object, int64(2), "status", "readyReplicas")).To(Succeed())
		d := validate(built(config.Default()), v, update(old, fixtures.Deployment("a", "d").Queue("other").Obj()))
		Expect(d.Denials()).To(HaveLen(1))
		Expect(d.Denials()[0].Message).To(Equal(`kueue.x-k8s.io/queue-name cannot be changed from "q" to "other" ` +
			`while the workload is running: scale it to zero first, or delete and re-create it`))
	})
})

func kueueChartDeployment(namespace, name string) *unstructured.Unstructured {
	data, err := os.ReadFile("../kueuecontroller/testdata/kueue-chart-deployment.yaml")
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

func controllerRequest(obj *unstructured.Unstructured, op admissionv1.Operation) *guard.Request {
	return &guard.Request{Operation: op, Kind: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: obj}
}

func guardControllers(p *guard.Pipeline, v cluster.View, req *guard.Request) *guard.Decision {
	d, err := p.ValidateControllers(context.Background(), req, v)
	Expect(err).NotTo(HaveOccurred())
	return d
}

var _ = Describe("the Kueue controller guard", func() {
	Context("under managed (allowed: kueue-system/kueue-controller-manager)", func() {
		p := built(config.Default())

		It("admits the allowed controller, its updates, ReplicaSets and Pods", func() {
			dep := kueueChartDeployment("kueue-system", "kueue-controller-manager")
			Expect(guardControllers(p, view(), controllerRequest(dep, admissionv1.Create)).Allowed()).To(BeTrue())
			Expect(guardControllers(p, view(), controllerRequest(dep, admissionv1.Update)).Allowed()).To(BeTrue())

			pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"namespace": "kueue-system", "name": "kueue-controller-manager-5d8f7-abcde",
					"labels": map[string]any{"pod-template-hash": "5d8f7", "app.kubernetes.io/name": "kueue",
						"control-plane": "controller-manager"},
					"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet",
						"name": "kueue-controller-manager-5d8f7", "uid": "u", "controller": true}}},
				"spec": dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"]}}
			Expect(guardControllers(p, view(), controllerRequest(pod, admissionv1.Create)).Allowed()).To(BeTrue())
		})

		DescribeTable("denies a second Kueue anywhere else, even renamed",
			func(namespace, name string) {
				d := guardControllers(p, view(), controllerRequest(kueueChartDeployment(namespace, name), admissionv1.Create))
				Expect(d.Denials()).To(HaveLen(1))
				v := d.Denials()[0]
				Expect(v.Rule).To(Equal(guard.RuleKueueSingleton))
				Expect(v.Field.String()).To(Equal("spec.template.spec.containers[0].image"))
				Expect(v.Message).To(ContainSubstring("would run a second Kueue controller manager"))
				Expect(v.Message).To(ContainSubstring("the managed Kueue install (Deployment kueue-system/kueue-controller-manager) owns this cluster"))
				Expect(v.Message).To(ContainSubstring("uninstall the other Kueue first"))
			},
			Entry("same name, other namespace", "kueue-other", "kueue-controller-manager"),
			Entry("renamed, other namespace", "batch-tools", "scheduler"),
			Entry("renamed in kueue-system", "kueue-system", "kueue-two"),
			Entry("in kube-system", "kube-system", "kueue-controller-manager"),
		)

		It("ignores kueue-guard's own namespace and unrelated workloads", func() {
			Expect(guardControllers(p, view(), controllerRequest(kueueChartDeployment("kueue-guard-system", "x"),
				admissionv1.Create)).Violations).To(BeEmpty())
			Expect(guardControllers(p, view(), controllerRequest(fixtures.Deployment("a", "web").Obj(),
				admissionv1.Create)).Violations).To(BeEmpty())
		})

		It("denies Kueue webhooks registered against a service outside Kueue's namespace", func() {
			hook := func(ns string) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
					"metadata": map[string]any{"name": "kueue-mutating-webhook-configuration"},
					"webhooks": []any{map[string]any{"name": "mclusterqueue.kb.io", "clientConfig": map[string]any{
						"service": map[string]any{"namespace": ns, "name": "kueue-webhook-service",
							"path": "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue"}}}},
				}}
			}
			d := guardControllers(p, view(), controllerRequest(hook("kueue-other"), admissionv1.Create))
			Expect(rules(d)).To(ConsistOf("kueue_guard.kueue_webhook_singleton/deny"))
			Expect(d.Denials()[0].Field.String()).To(Equal("webhooks[0].clientConfig.service.namespace"))
			Expect(guardControllers(p, view(), controllerRequest(hook("kueue-system"), admissionv1.Create)).Violations).To(BeEmpty())
		})
	})

	Context("under oss with no configured controllers: the first one wins", func() {
		cfg := config.Default()
		cfg.InstallProfile = config.ProfileOSS
		cfg.Controllers.Allowed = nil
		p := built(cfg)

		It("admits the first Kueue and denies a second", func() {
			first := kueueChartDeployment("kueue-a", "kueue-controller-manager")
			Expect(guardControllers(p, view(), controllerRequest(first, admissionv1.Create)).Allowed()).To(BeTrue())

			running := view(first)
			Expect(guardControllers(p, running, controllerRequest(first, admissionv1.Update)).Allowed()).To(BeTrue())
			d := guardControllers(p, running, controllerRequest(kueueChartDeployment("kueue-b", "kueue-controller-manager"), admissionv1.Create))
			Expect(d.Allowed()).To(BeFalse())
			Expect(d.Denials()[0].Message).To(ContainSubstring("Deployment kueue-a/kueue-controller-manager already runs Kueue"))
		})
	})
})
