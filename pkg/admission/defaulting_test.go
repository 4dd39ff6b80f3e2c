package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const queueLabel = integrations.QueueNameLabel

type exemptKubeSystem struct{}

func (exemptKubeSystem) IsExempt(ns string) bool { return ns == "kube-system" }

func (exemptKubeSystem) IsOwnNamespace(ns string) bool { return ns == "kueue-guard-system" }

func ns(name string, labels map[string]string, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
}

func lq(namespace, name string) *kueue.LocalQueue {
	return &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

func view(objs ...client.Object) cluster.View {
	s, err := cluster.NewSnapshot(objs...)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func gpuRuleConfig(missing config.MissingLocalQueueAction) *config.Configuration {
	cfg := config.Default()
	cfg.Defaulting.MissingLocalQueue = missing
	cfg.Defaulting.Rules = []config.DefaultingRule{
		{Name: "gpu-jobs", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			RequestsResource: "nvidia.com/gpu", LocalQueue: "gpu", PriorityClass: "gpu-batch"},
		{Name: "ml-all", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			LocalQueue: "ml-cpu"},
	}
	Expect(cfg.Validate()).To(BeEmpty())
	return cfg
}

func pipelineFor(cfg *config.Configuration) *guard.Pipeline {
	r, err := guard.NewQueueResolver(cfg)
	Expect(err).NotTo(HaveOccurred())
	return guard.NewPipeline(exemptKubeSystem{}, trust.New(cfg.Trust.Controllers),
		guard.Steps{Mutating: []guard.MutationStep{guard.NewDefaulter(r, cfg.Defaulting.MissingLocalQueue)}})
}

func create(obj *unstructured.Unstructured) *guard.Request {
	return &guard.Request{Operation: admissionv1.Create, Kind: obj.GroupVersionKind(), Namespace: obj.GetNamespace(),
		Name: obj.GetName(), Object: obj}
}

func mutate(p *guard.Pipeline, v cluster.View, req *guard.Request) *guard.Decision {
	d, err := p.Mutate(context.Background(), req, v)
	Expect(err).NotTo(HaveOccurred())
	return d
}

// result is the object after the decision's patch (the original when unpatched).
func result(req *guard.Request, d *guard.Decision) *unstructured.Unstructured {
	if d.Object != nil {
		return d.Object
	}
	return req.Object
}

func queueOf(obj *unstructured.Unstructured) string {
	in, ok := integrations.Lookup(obj.GroupVersionKind().GroupKind())
	Expect(ok).To(BeTrue())
	return workload.QueueName(obj, in)
}

var _ = Describe("queue defaulting", func() {
	cfg := gpuRuleConfig(config.MissingLocalQueueWarn)
	p := pipelineFor(cfg)

	DescribeTable("precedence: namespace annotation, then the first matching rule, then Kueue's default LocalQueue",
		func(namespace *corev1.Namespace, queues []string, obj *unstructured.Unstructured, wantQueue, wantSource, wantPriority string) {
			objs := []client.Object{namespace}
			for _, q := range queues {
				objs = append(objs, lq(namespace.Name, q))
			}
			req := create(obj)
			d := mutate(p, view(objs...), req)
			out := result(req, d)
			Expect(queueOf(out)).To(Equal(wantQueue))
			Expect(out.GetAnnotations()[guard.DefaultedByAnnotation]).To(Equal(wantSource))
			Expect(out.GetLabels()[integrations.PriorityClassLabel]).To(Equal(wantPriority))
			Expect(d.Warnings).To(BeEmpty())
		},
		Entry("annotation wins over rules and default",
			ns("ml", map[string]string{"team": "ml"}, map[string]string{guard.DefaultQueueAnnotation: "team"}),
			[]string{"team", "gpu", "default"}, fixtures.Job("ml", "j").Requests("nvidia.com/gpu", "1").Obj(),
			"team", "namespace-annotation", ""),
		Entry("annotation carries the namespace's priority class",
			ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "team", guard.DefaultPriorityClassAnnotation: "low"}),
			[]string{"team"}, fixtures.Job("a", "j").Obj(), "team", "namespace-annotation", "low"),
		Entry("GPU rule for a GPU job, with the rule's priority class",
			ns("ml", map[string]string{"team": "ml"}, nil), []string{"gpu", "ml-cpu", "default"},
			fixtures.Job("ml", "j").Requests("nvidia.com/gpu", "2").Obj(), "gpu", "rule/gpu-jobs", "gpu-batch"),
		Entry("a rule's resource condition skips CPU jobs; the next rule matches",
			ns("ml", map[string]string{"team": "ml"}, nil), []string{"gpu", "ml-cpu"},
			fixtures.Job("ml", "j").Obj(), "ml-cpu", "rule/ml-all", ""),
		Entry("a zero GPU request does not count as requesting GPUs",
			ns("ml", map[string]string{"team": "ml"}, nil), []string{"gpu", "ml-cpu"},
			fixtures.Job("ml", "j").Requests("nvidia.com/gpu", "0").Obj(), "ml-cpu", "rule/ml-all", ""),
		Entry("Kueue's default LocalQueue when nothing else applies",
			ns("other", map[string]string{"team": "web"}, nil), []string{"default"},
			fixtures.Job("other", "j").Obj(), "default", "kueue-default-localqueue", ""),
		Entry("nothing when there is no default at all",
			ns("other", nil, nil), nil, fixtures.Job("other", "j").Obj(), "", "", ""),
		Entry("GPU found in an AppWrapper's embedded template",
			ns("ml", map[string]string{"team": "ml"}, nil), []string{"gpu"},
			fixtures.AppWrapper("ml", "aw").Requests("nvidia.com/gpu", "1").Obj(), "gpu", "rule/gpu-jobs", "gpu-batch"),
	)

	DescribeTable("every catalog kind gets its label where Kueue reads it",
		func(in *integrations.Integration) {
			obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
			obj.SetGroupVersionKind(in.GVK)
			obj.SetNamespace("a")
			obj.SetName("w")
			req := create(obj)
			d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), req)
			Expect(d.Object).NotTo(BeNil())
			got, found, err := unstructured.NestedString(d.Object.Object, append(in.LabelsPath(), queueLabel)...)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue())
			Expect(got).To(Equal("q"))
		},
		catalogEntries(),
	)

	It("puts a CronJob's label into spec.jobTemplate.metadata.labels, with a minimal patch", func() {
		req := create(fixtures.CronJob("a", "nightly").Obj())
		d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), req)
		Expect(d.Patch).To(Equal([]jsonpatch.Operation{
			{Operation: "add", Path: "/spec/jobTemplate/metadata", Value: map[string]any{"labels": map[string]any{queueLabel: "q"}}},
			{Operation: "add", Path: "/spec/jobTemplate/metadata/annotations",
				Value: map[string]any{guard.DefaultedByAnnotation: "namespace-annotation"}},
		}))
		Expect(d.Object.GetLabels()).NotTo(HaveKey(queueLabel), "the CronJob itself is not a Kueue workload")
	})

	DescribeTable("emits a patch that turns the object as received into the mutated one, for every catalog kind",
		func(in *integrations.Integration) {
			// Template labels that disagree with the default are aligned; keys
			// with / and ~ are escaped in the patch's paths.
			obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{
					queueLabel: "stale", "a~b/c": "x"}}},
				"replicatedJobs": []any{map[string]any{"template": map[string]any{"metadata": map[string]any{
					"labels": map[string]any{queueLabel: "stale", integrations.PriorityClassLabel: "old"}}}}},
			}}}
			obj.SetGroupVersionKind(in.GVK)
			obj.SetNamespace("a")
			obj.SetName("w")
			obj.SetAnnotations(map[string]string{"note/x~y": "1"})
			if in.TemplateQueue {
				// A kind queued by a pod template's label is not defaulted.
				unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "labels", queueLabel)
				unstructured.RemoveNestedField(obj.Object, "spec", "replicatedJobs")
			}
			raw, err := json.Marshal(obj.Object)
			Expect(err).NotTo(HaveOccurred())
			req := create(obj)
			req.Raw = raw
			d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q",
				guard.DefaultPriorityClassAnnotation: "p"}), lq("a", "q")), req)
			Expect(d.Patch).NotTo(BeEmpty())
			patchJSON, err := json.Marshal(d.Patch)
			Expect(err).NotTo(HaveOccurred())
			patch, err := jsonpatchapply.DecodePatch(patchJSON)
			Expect(err).NotTo(HaveOccurred())
			patched, err := patch.Apply(raw)
			Expect(err).NotTo(HaveOccurred())
			want, err := json.Marshal(d.Object.Object)
			Expect(err).NotTo(HaveOccurred())
			Expect(patched).To(MatchJSON(want))
			Expect(req.Object.Object).To(HaveKeyWithValue("metadata", Not(HaveKey("labels"))), "the received object is not edited")
		},
		catalogEntries(),
	)

	DescribeTable("says it is settled from the own labels only when Mutate would change nothing",
		func(in *integrations.Integration) {
			v := view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q", guard.DefaultPriorityClassAnnotation: "p"}),
				ns("b", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q"), lq("b", "q"))
			for _, namespace := range []string{"a", "b"} {
				for _, own := range []map[string]string{
					nil,
					{queueLabel: "mine"},
					{queueLabel: "mine", integrations.PriorityClassLabel: "high"},
					{integrations.PriorityClassLabel: "high"},
				} {
					obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
					obj.SetGroupVersionKind(in.GVK)
					obj.SetNamespace(namespace)
					obj.SetName("w")
					if own != nil {
						Expect(unstructured.SetNestedStringMap(obj.Object, own, in.LabelsPath()...)).To(Succeed())
					}
					raw, err := json.Marshal(obj.Object)
					Expect(err).NotTo(HaveOccurred())
					peeked, err := workload.PeekOwnLabels(raw, in)
					Expect(err).NotTo(HaveOccurred())
					Expect(peeked).To(Equal(workload.Labels(obj, in)))
					env := guard.Envelope{Operation: admissionv1.Create, Kind: in.GVK.GroupKind(), Namespace: namespace}
					d := mutate(p, v, create(obj))
					unchanged := len(d.Patch) == 0 && len(d.Violations) == 0 && len(d.Warnings) == 0
					if p.MutateSettled(env, peeked, v) {
						Expect(unchanged).To(BeTrue(), "settled, but Mutate changed %s in %s: %v", own, namespace, d.Patch)
					} else if own[queueLabel] != "" && namespace == "b" {
						Fail(fmt.Sprintf("a queued %s in a namespace without a default priority is settled", in.Key()))
					}
				}
			}
		},
		catalogEntries(),
	)

	It("costs no copy and no patch when there is nothing to change", func() {
		req := create(fixtures.Job("a", "j").Queue("mine").Obj())
		d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), req)
		Expect(d.Patch).To(BeEmpty())
		Expect(d.Object).To(BeNil())
	})

	It("patches only what it adds when labels already exist", func() {
		req := create(fixtures.Job("a", "j").Label("app", "x").Obj())
		d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), req)
		Expect(d.Patch).To(ConsistOf(
			jsonpatch.Operation{Operation: "add", Path: "/metadata/labels/kueue.x-k8s.io~1queue-name", Value: "q"},
			jsonpatch.Operation{Operation: "add", Path: "/metadata/annotations",
				Value: map[string]any{guard.DefaultedByAnnotation: "namespace-annotation"}},
		))
	})

	It("is idempotent under reinvocation", func() {
		v := view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q", guard.DefaultPriorityClassAnnotation: "p"}), lq("a", "q"))
		req := create(fixtures.JobSet("a", "js").Obj())
		first := mutate(p, v, req)
		Expect(first.Patch).NotTo(BeEmpty())
		again := mutate(p, v, create(first.Object))
		Expect(again.Patch).To(BeEmpty())
		Expect(again.Warnings).To(BeEmpty())
	})

	const (
		jobController = "system:serviceaccount:kube-system:job-controller"
		tenant        = "alice"
	)
	DescribeTable("owner rules: only a trusted controller's part of a Kueue-managed workload is left unlabeled",
		func(obj *unstructured.Unstructured, user string, labeled bool) {
			req := create(obj)
			req.UserInfo.Username = user
			d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), req)
			if labeled {
				Expect(queueOf(result(req, d))).To(Equal("q"))
			} else {
				Expect(d.Patch).To(BeEmpty())
			}
		},
		Entry("a Job's pod from the Job controller", fixtures.Pod("a", "p").ControlledBy("batch/v1", "Job", "j").Obj(), jobController, false),
		Entry("a Job's pod from a tenant who wrote the owner reference",
			fixtures.Pod("a", "p").ControlledBy("batch/v1", "Job", "j").Obj(), tenant, true),
		Entry("a StatefulSet's pod from its controller", fixtures.Pod("a", "p").ControlledBy("apps/v1", "StatefulSet", "s").Obj(),
			"system:serviceaccount:kube-system:statefulset-controller", false),
		Entry("a JobSet's Job from the JobSet operator", fixtures.Job("a", "j").ControlledBy("jobset.x-k8s.io/v1alpha2", "JobSet", "js").Obj(),
			"system:serviceaccount:jobset-system:jobset-controller-manager", false),
		Entry("a JobSet's Job from a tenant", fixtures.Job("a", "j").ControlledBy("jobset.x-k8s.io/v1alpha2", "JobSet", "js").Obj(), tenant, true),
		Entry("a RayCluster's pod from KubeRay", fixtures.Pod("a", "p").ControlledBy("ray.io/v1", "RayCluster", "rc").Obj(),
			"system:serviceaccount:ray-system:kuberay-operator", false),
		Entry("a TrainJob's JobSet from the Trainer", fixtures.JobSet("a", "js").ControlledBy("trainer.kubeflow.org/v1alpha1", "TrainJob", "t").Obj(),
			"system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager", false),
		Entry("a ReplicaSet's pod is judged as a pod of its own, even from its controller",
			fixtures.Pod("a", "p").ControlledBy("apps/v1", "ReplicaSet", "rs").Obj(), "system:serviceaccount:kube-system:replicaset-controller", true),
		Entry("a DaemonSet's pod is a plain pod to Kueue", fixtures.Pod("a", "p").ControlledBy("apps/v1", "DaemonSet", "d").Obj(),
			"system:serviceaccount:kube-system:daemon-set-controller", true),
		Entry("an owner at a version Kueue does not match", fixtures.Pod("a", "p").ControlledBy("batch/v2", "Job", "j").Obj(), jobController, true),
		Entry("an owner of an API that is not served", fixtures.Pod("a", "p").ControlledBy("example.com/v1", "Job", "j").Obj(), jobController, true),
		Entry("a CronJob's Job is top-level", fixtures.Job("a", "j").ControlledBy("batch/v1", "CronJob", "c").Obj(),
			"system:serviceaccount:kube-system:cronjob-controller", true),
		Entry("a Job of a controller Kueue does not know is top-level",
			fixtures.Job("a", "j").ControlledBy("argoproj.io/v1alpha1", "Workflow", "wf").Obj(), jobController, true),
		Entry("a non-controller owner does not count", func() *unstructured.Unstructured {
			o := fixtures.Pod("a", "p").Obj()
			o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u"}})
			return o
		}(), jobController, true),
	)

	It("trusts a controller by group and by username prefix, as configured", func() {
		cfg := config.Default()
		cfg.Trust.Controllers = []string{"group:system:controllers", "system:serviceaccount:operators:*"}
		Expect(cfg.Validate()).To(BeEmpty())
		pp := pipelineFor(cfg)
		st := view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q"))
		for _, u := range []authenticationv1.UserInfo{
			{Username: "x", Groups: []string{"system:controllers"}},
			{Username: "system:serviceaccount:operators:jobset"},
		} {
			req := create(fixtures.Job("a", "j").ControlledBy("jobset.x-k8s.io/v1alpha2", "JobSet", "js").Obj())
			req.UserInfo = u
			Expect(mutate(pp, st, req).Patch).To(BeEmpty(), "%v is trusted", u)
		}
		req := create(fixtures.Job("a", "j").ControlledBy("jobset.x-k8s.io/v1alpha2", "JobSet", "js").Obj())
		req.UserInfo = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:job-controller"}
		Expect(queueOf(result(req, mutate(pp, st, req)))).To(Equal("q"), "the default list no longer applies")
	})

	It("aligns a template's queue label with the queue it defaults", func() {
		job := fixtures.Job("a", "j").Obj()
		Expect(unstructured.SetNestedField(job.Object, "other", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name")).To(Succeed())
		req := create(job)
		d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), req)
		out := result(req, d)
		Expect(queueOf(out)).To(Equal("q"))
		v, _, _ := unstructured.NestedString(out.Object, "spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name")
		Expect(v).To(Equal("q"))
	})

	It("does not default a Deployment whose pod template carries the queue (Kueue admits its pods by it)", func() {
		dep := fixtures.Deployment("a", "d").Obj()
		Expect(unstructured.SetNestedField(dep.Object, "mine", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name")).To(Succeed())
		d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), create(dep))
		Expect(d.Patch).To(BeEmpty())
	})

	DescribeTable("never mutates outside CREATE of the object itself",
		func(mod func(*guard.Request)) {
			req := create(fixtures.Job("a", "j").Obj())
			mod(req)
			d := mutate(p, view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")), req)
			Expect(d.Patch).To(BeEmpty())
			Expect(d.Violations).To(BeEmpty())
		},
		Entry("UPDATE", func(r *guard.Request) { r.Operation = admissionv1.Update }),
		Entry("DELETE", func(r *guard.Request) { r.Operation = admissionv1.Delete }),
		Entry("a subresource", func(r *guard.Request) { r.SubResource = "status" }),
		Entry("an exempt namespace", func(r *guard.Request) { r.Namespace = "kube-system" }),
		Entry("a kind outside the catalog", func(r *guard.Request) { r.Kind.Kind = "ConfigMap"; r.Kind.Group = "" }),
	)

	Describe("a default LocalQueue that does not exist", func() {
		v := view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "missing"}))

		It("warns and labels anyway by default", func() {
			req := create(fixtures.Job("a", "j").Obj())
			d := mutate(pipelineFor(gpuRuleConfig(config.MissingLocalQueueWarn)), v, req)
			Expect(d.Allowed()).To(BeTrue())
			Expect(queueOf(d.Object)).To(Equal("missing"))
			Expect(d.Warnings).To(ConsistOf(`LocalQueue "missing" not found in namespace "a": the workload stays pending until it exists`))
			for _, w := range d.Warnings {
				Expect(len(w)).To(BeNumerically("<", 120))
			}
		})

		It("denies with deny, naming the queue, the source and what to do", func() {
			req := create(fixtures.Job("a", "j").Obj())
			d := mutate(pipelineFor(gpuRuleConfig(config.MissingLocalQueueDeny)), v, req)
			Expect(d.Allowed()).To(BeFalse())
			Expect(d.Denials()).To(ConsistOf(guard.Violation{
				Rule: guard.RuleMissingLocalQueue, Field: fieldpath.Parse("metadata.labels[kueue.x-k8s.io/queue-name]"),
				Enforcement: guard.EnforcementDeny,
				Message: `default LocalQueue "missing" (from namespace-annotation) does not exist in namespace "a": ` +
					`ask an admin to create it, or set kueue.x-k8s.io/queue-name`,
			}))
		})

		It("leaves the object alone with ignore", func() {
			req := create(fixtures.Job("a", "j").Obj())
			d := mutate(pipelineFor(gpuRuleConfig(config.MissingLocalQueueIgnore)), v, req)
			Expect(d.Patch).To(BeEmpty())
			Expect(d.Violations).To(BeEmpty())
		})
	})

	It("contains a panicking step and reports it as an internal error", func() {
		pp := guard.NewPipeline(nil, nil, guard.Steps{Mutating: []guard.MutationStep{panicStep{}}})
		_, err := pp.Mutate(context.Background(), create(fixtures.Job("a", "j").Obj()), view())
		var se *guard.StepError
		Expect(errors.As(err, &se)).To(BeTrue())
		Expect(err.Error()).To(Equal("internal error in panics: unexpected failure on this object"))
	})

	It("survives malformed objects without panicking", func() {
		obj := fixtures.Job("a", "j").Obj()
		obj.Object["metadata"].(map[string]any)["labels"] = "not-a-map"
		obj.Object["spec"] = []any{"x"}
		_, err := p.Mutate(context.Background(), create(obj), view(ns("a", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("a", "q")))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("internal error in queue-defaulting"))
	})
})

type panicStep struct{}

func (panicStep) Name() string                       { return "panics" }
func (panicStep) Handles(admissionv1.Operation) bool { return true }

func (panicStep) Mutate(context.Context, *guard.Request, guard.Target, cluster.View, *guard.Decision) error {
	panic("boom")
}

func catalogEntries() []TableEntry {
	var entries []TableEntry
	for _, in := range integrations.All() {
		entries = append(entries, Entry(in.Key(), in))
	}
	return entries
}
