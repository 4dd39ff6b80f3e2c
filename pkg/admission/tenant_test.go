package admission_test

import (
	"context"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

const (
	kueueSA  = "system:serviceaccount:kueue-system:kueue-controller-manager"
	tenantID = "alice"
)

func as(r *guard.Request, user string) *guard.Request {
	r.UserInfo = authenticationv1.UserInfo{Username: user}
	return r
}

var _ = Describe("tenant-proof guards", func() {
	// "owed" has a default queue; "free" has none.
	objs := func() []client.Object {
		return []client.Object{ns("owed", nil, map[string]string{guard.DefaultQueueAnnotation: "q"}), lq("owed", "q"),
			ns("free", nil, nil), lq("free", "q")}
	}
	suspendedJob := func(ns string) fixtures.Object {
		return fixtures.Job(ns, "j").Queue("q").Set(true, "spec", "suspend")
	}

	DescribeTable("only a workload's controller creates its parts",
		func(req *guard.Request, denied bool) {
			d := validate(built(config.Default()), view(objs()...), req)
			if denied {
				Expect(rules(d)).To(ContainElement(guard.RuleUntrustedOwner + "/deny"))
				Expect(d.Denials()[0].Field.String()).To(Equal("metadata.ownerReferences"))
			} else {
				Expect(rules(d)).NotTo(ContainElement(guard.RuleUntrustedOwner + "/deny"))
			}
		},
		Entry("a tenant's Job under their own Job", as(create(fixtures.Job("free", "j").Queue("q").ControlledBy("batch/v1", "Job", "p").Obj()), tenantID), true),
		Entry("a tenant's Pod under a JobSet", as(create(fixtures.Pod("free", "p").Queue("q").ControlledBy("jobset.x-k8s.io/v1alpha2", "JobSet", "js").Obj()), tenantID), true),
		Entry("a tenant adding a Job owner to an existing Job",
			as(update(fixtures.Job("free", "j").Queue("q").Obj(), fixtures.Job("free", "j").Queue("q").ControlledBy("batch/v1", "Job", "p").Obj()), tenantID), true),
		Entry("an update keeping the owner", as(update(fixtures.Job("free", "j").Queue("q").ControlledBy("batch/v1", "Job", "p").Obj(),
			fixtures.Job("free", "j").Queue("q").ControlledBy("batch/v1", "Job", "p").Set(true, "spec", "suspend").Obj()), tenantID), false),
		Entry("a ReplicaSet owner (Kueue walks through it to the ReplicaSet's owner)",
			as(create(fixtures.Pod("free", "p").Queue("q").ControlledBy("apps/v1", "ReplicaSet", "rs").Obj()), tenantID), true),
		Entry("the ReplicaSet controller's Pod under its ReplicaSet (judged as a Pod of its own)",
			as(create(fixtures.Pod("free", "p").Queue("q").ControlledBy("apps/v1", "ReplicaSet", "rs").Obj()),
				"system:serviceaccount:kube-system:replicaset-controller"), false),
		Entry("an owner Kueue does not manage", as(create(fixtures.Job("free", "j").Queue("q").ControlledBy("example.com/v1", "Job", "p").Obj()), tenantID), false),
		Entry("the Job controller's part of its Job (not judged at all)",
			as(create(fixtures.Pod("free", "p").ControlledBy("batch/v1", "Job", "j").Obj()), "system:serviceaccount:kube-system:job-controller"), false),
	)

	DescribeTable("a queued workload stays queued",
		func(namespace string, old, new *unstructured.Unstructured, user string, want []string) {
			d := validate(built(config.Default()), view(objs()...), as(update(old, new), user))
			Expect(rules(d)).To(Equal(want))
		},
		Entry("a tenant removes the queue of a suspended Job", "owed",
			suspendedJob("owed").Obj(), fixtures.Job("owed", "j").Set(true, "spec", "suspend").Obj(), tenantID,
			[]string{guard.RuleQueueLabelRemoved + "/deny"}),
		Entry("then resumes it", "owed",
			fixtures.Job("owed", "j").Set(true, "spec", "suspend").Obj(), fixtures.Job("owed", "j").Set(false, "spec", "suspend").Obj(), tenantID,
			[]string{guard.RuleResumeWithoutQueue + "/deny"}),
		Entry("a tenant removes the label of a gated Pod", "owed",
			fixtures.Pod("owed", "p").Queue("q").Set([]any{map[string]any{"name": "kueue.x-k8s.io/admission"}}, "spec", "schedulingGates").Obj(),
			fixtures.Pod("owed", "p").Set([]any{map[string]any{"name": "kueue.x-k8s.io/admission"}}, "spec", "schedulingGates").Obj(), tenantID,
			[]string{guard.RuleQueueLabelRemoved + "/deny"}),
		Entry("a tenant removes Kueue's gate from an unlabeled Pod", "owed",
			fixtures.Pod("owed", "p").Set([]any{map[string]any{"name": "kueue.x-k8s.io/admission"}}, "spec", "schedulingGates").Obj(),
			fixtures.Pod("owed", "p").Obj(), tenantID,
			[]string{guard.RuleResumeWithoutQueue + "/deny"}),
		Entry("Kueue (trusted) may remove it", "owed",
			suspendedJob("owed").Obj(), fixtures.Job("owed", "j").Set(true, "spec", "suspend").Obj(), kueueSA, []string(nil)),
		Entry("and resume a Job without a queue", "owed",
			fixtures.Job("owed", "j").Set(true, "spec", "suspend").Obj(), fixtures.Job("owed", "j").Set(false, "spec", "suspend").Obj(), kueueSA,
			[]string(nil)),
		Entry("moving a suspended Job to another queue is fine", "owed",
			suspendedJob("owed").Obj(), fixtures.Job("owed", "j").Queue("q2").Set(true, "spec", "suspend").Obj(), tenantID,
			[]string{guard.RuleMissingLocalQueue + "/warn"}),
		Entry("a namespace without a default owes no queue", "free",
			suspendedJob("free").Obj(), fixtures.Job("free", "j").Set(true, "spec", "suspend").Obj(), tenantID, []string(nil)),
		Entry("removing the queue while running stays Kueue's own rule", "free",
			fixtures.Job("free", "j").Queue("q").Obj(), fixtures.Job("free", "j").Obj(), tenantID,
			[]string{guard.RuleImmutableQueueName + "/deny"}),
	)

	It("owes a queue everywhere unqueued.action is deny", func() {
		cfg := config.Default()
		cfg.Defaulting.Unqueued.Action = config.UnqueuedDeny
		d := validate(built(cfg), view(objs()...), as(update(fixtures.Job("free", "j").Set(true, "spec", "suspend").Obj(),
			fixtures.Job("free", "j").Set(false, "spec", "suspend").Obj()), tenantID))
		Expect(rules(d)).To(Equal([]string{guard.RuleResumeWithoutQueue + "/deny"}))
	})

	DescribeTable("labels where Kueue reads them must agree",
		func(obj *unstructured.Unstructured, want []string, field string) {
			// As sent, before Kueue's webhook aligns a Deployment's template
			// (and holds the workload, which is not this table's concern).
			d := validateUnheld(built(config.Default()), view(objs()...), as(create(obj), tenantID))
			d.Violations = slices.DeleteFunc(d.Violations, func(v guard.Violation) bool { return v.Rule == guard.RuleNotHeld })
			Expect(rules(d)).To(Equal(want))
			if field != "" {
				Expect(d.Violations[0].Field.String()).To(Equal(field))
			}
		},
		Entry("a Job whose pod template names another queue",
			fixtures.Job("free", "j").Queue("q").Set("other", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name").Obj(),
			[]string{guard.RuleLabelMismatch + "/deny"}, "spec.template.metadata.labels[kueue.x-k8s.io/queue-name]"),
		Entry("a Deployment with another priority class in its template",
			fixtures.Deployment("free", "d").Queue("q").Label("kueue.x-k8s.io/priority-class", "low").
				Set("critical", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/priority-class").Obj(),
			[]string{guard.RuleLabelMismatch + "/deny"}, "spec.template.metadata.labels[kueue.x-k8s.io/priority-class]"),
		Entry("a JobSet's job template with another queue",
			fixtures.JobSet("free", "js").Queue("q").Set([]any{map[string]any{"name": "w", "template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"kueue.x-k8s.io/queue-name": "other"}}}}}, "spec", "replicatedJobs").Obj(),
			[]string{guard.RuleLabelMismatch + "/deny"}, "spec.replicatedJobs[0].template.metadata.labels[kueue.x-k8s.io/queue-name]"),
		Entry("the same value in the template is fine",
			fixtures.Job("free", "j").Queue("q").Set("q", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name").Obj(),
			[]string(nil), ""),
	)

	It("reads a Deployment's priority class from its pod template when it has none itself, as its pods carry it", func() {
		dep := fixtures.Deployment("free", "d").Queue("q").Set("critical", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/priority-class").Obj()
		in, _ := integrations.Lookup(dep.GroupVersionKind().GroupKind())
		Expect(workload.PriorityClass(dep, in)).To(Equal("critical"), "so the priority policy judges it")
		Expect(validate(built(config.Default()), view(objs()...), create(dep)).Violations).To(BeEmpty())
	})

	It("reads a Deployment's queue from its pod template when it has none itself", func() {
		dep := fixtures.Deployment("free", "d").Set("q", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name").Obj()
		// The template's queue makes it a queued workload: removing it later is a dequeue.
		d := validate(built(config.Default()), view(objs()...), as(update(dep, fixtures.Deployment("owed", "d").Obj()), tenantID))
		Expect(d.Allowed()).To(BeFalse())
	})

	Describe("the defaulting backstop", func() {
		It("denies a new workload that defaulting should have labeled", func() {
			d := validate(built(config.Default()), view(objs()...), as(create(fixtures.Job("owed", "j").Obj()), tenantID))
			Expect(rules(d)).To(ContainElement(guard.RuleDefaultingBackstop + "/deny"))
			Expect(d.Denials()[0].Message).To(ContainSubstring(`get LocalQueue "q"`))
			Expect(d.Denials()[0].Message).To(ContainSubstring("retry"))
		})
		It("warns or stays silent as configured", func() {
			for action, want := range map[config.BackstopAction][]string{
				config.BackstopWarn: {guard.RuleDefaultingBackstop + "/warn"}, config.BackstopOff: nil} {
				cfg := config.Default()
				cfg.Defaulting.Backstop = action
				d := validate(built(cfg), view(objs()...), as(create(fixtures.Job("owed", "j").Obj()), tenantID))
				Expect(rules(d)).To(Equal(want), string(action))
			}
		})
		It("leaves a workload that has a queue, and namespaces without defaults, alone", func() {
			Expect(validate(built(config.Default()), view(objs()...), create(fixtures.Job("owed", "j").Queue("q").Obj())).Violations).To(BeEmpty())
			Expect(validate(built(config.Default()), view(objs()...), create(fixtures.Job("free", "j").Obj())).Violations).To(BeEmpty())
		})
	})

	It("applies defaulting.unqueued in the namespaces its selector matches", func() {
		cfg := config.Default()
		cfg.Defaulting.Unqueued = config.Unqueued{Action: config.UnqueuedDeny,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch": "true"}}}
		v := view(append(objs(), ns("batch", map[string]string{"batch": "true"}, nil))...)
		d := validate(built(cfg), v, create(fixtures.Job("batch", "j").Obj()))
		Expect(rules(d)).To(Equal([]string{guard.RuleUnqueuedWorkload + "/deny"}))
		Expect(validate(built(cfg), v, create(fixtures.Job("free", "j").Obj())).Violations).To(BeEmpty())
	})

	Describe("the scale of a queued StatefulSet", func() {
		sts := func(replicas int64) *unstructured.Unstructured {
			return fixtures.StatefulSet("free", "s").Queue("q").Set(replicas, "spec", "replicas").Obj()
		}
		scale := func(replicas int64) *guard.Request {
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
				"metadata": map[string]any{"name": "s", "namespace": "free"}, "spec": map[string]any{"replicas": replicas}}}
			r := as(update(obj, obj), tenantID)
			r.SubResource = guard.ScaleSubResource
			r.Resource.Group, r.Resource.Version, r.Resource.Resource = "apps", "v1", "statefulsets"
			return r
		}
		withSts := func() cluster.View { return view(append(objs(), sts(2))...) }

		It("is judged as the StatefulSet's update: no resize of an admitted pod group", func() {
			d := validate(built(config.Default()), withSts(), scale(8))
			Expect(rules(d)).To(Equal([]string{guard.RulePodGroupResize + "/deny"}))
			Expect(d.Denials()[0].Message).To(ContainSubstring("scale it to 0 first"))
		})
		It("allows scaling to zero and back", func() {
			Expect(validate(built(config.Default()), withSts(), scale(0)).Allowed()).To(BeTrue())
		})
		It("leaves a StatefulSet it does not hold (unqueued) alone", func() {
			Expect(validate(built(config.Default()), view(objs()...), scale(8)).Violations).To(BeEmpty())
		})
	})

	Describe("every scaled kind", func() {
		scaleOf := func(resource string, replicas int64) *guard.Request {
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
				"metadata": map[string]any{"name": "w", "namespace": "free"}, "spec": map[string]any{"replicas": replicas}}}
			r := as(update(obj, obj), tenantID)
			r.SubResource = guard.ScaleSubResource
			in, ok := integrations.LookupResource(schema.GroupResource{Group: groupOf(resource), Resource: resourceOf(resource)})
			Expect(ok).To(BeTrue())
			r.Resource.Group, r.Resource.Version, r.Resource.Resource = in.GVK.Group, in.GVK.Version, in.Resource
			return r
		}
		// seen records what the validating steps are asked to judge.
		judged := func(held *unstructured.Unstructured, resource string) []*guard.Request {
			rec := &recorder{}
			p := guard.NewPipeline(nil, nil, guard.Steps{Validating: []guard.ValidationStep{rec}})
			_, err := p.Validate(context.Background(), scaleOf(resource, 8), view(append(objs(), held)...))
			Expect(err).NotTo(HaveOccurred())
			return rec.seen
		}
		podTemplateQueue := func(o fixtures.Object) fixtures.Object {
			return o.Set(map[string]any{"app": "w", integrations.QueueNameLabel: "q"}, "spec", "template", "metadata", "labels")
		}

		DescribeTable("a scale of a queued workload is judged as the update of the workload to the new size",
			func(held *unstructured.Unstructured, resource string) {
				seen := judged(held, resource)
				Expect(seen).To(HaveLen(1))
				Expect(seen[0].Kind).To(Equal(held.GroupVersionKind()))
				Expect(seen[0].SubResource).To(BeEmpty())
				Expect(seen[0].OldObject.Object["spec"].(map[string]any)["replicas"]).To(BeEquivalentTo(2))
				Expect(seen[0].Object.Object["spec"].(map[string]any)["replicas"]).To(BeEquivalentTo(8))
				Expect(seen[0].UserInfo.Username).To(Equal(tenantID))
			},
			Entry("a StatefulSet labelled itself", fixtures.StatefulSet("free", "w").Queue("q").Set(int64(2), "spec", "replicas").Obj(), "apps/statefulsets"),
			Entry("a StatefulSet queued by its pod template only", podTemplateQueue(fixtures.StatefulSet("free", "w")).Set(int64(2), "spec", "replicas").Obj(), "apps/statefulsets"),
			Entry("a Deployment queued by its pod template only", podTemplateQueue(fixtures.Deployment("free", "w")).Set(int64(2), "spec", "replicas").Obj(), "apps/deployments"),
			Entry("a LeaderWorkerSet", fixtures.LeaderWorkerSet("free", "w").Queue("q").Set(int64(2), "spec", "replicas").Obj(), "leaderworkerset.x-k8s.io/leaderworkersets"),
		)

		It("does not judge the scale of an unqueued workload: Kueue does not manage it", func() {
			Expect(judged(fixtures.Deployment("free", "w").Set(int64(2), "spec", "replicas").Obj(), "apps/deployments")).To(BeEmpty())
		})
	})
})

// recorder is a validating step that keeps every request it is asked to judge.
type recorder struct{ seen []*guard.Request }

func (r *recorder) Name() string { return "recorder" }

func (r *recorder) Handles(admissionv1.Operation) bool { return true }

func (r *recorder) Validate(_ context.Context, req *guard.Request, _ guard.Target, _ cluster.View, _ *guard.Decision) error {
	r.seen = append(r.seen, req)
	return nil
}

// groupOf and resourceOf split "group/resource".
func groupOf(gr string) string    { g, _, _ := strings.Cut(gr, "/"); return g }
func resourceOf(gr string) string { _, r, _ := strings.Cut(gr, "/"); return r }
