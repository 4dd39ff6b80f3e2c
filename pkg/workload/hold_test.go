package workload_test

import (
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func lookup(obj *unstructured.Unstructured) *integrations.Integration {
	in, ok := integrations.Lookup(obj.GroupVersionKind().GroupKind())
	Expect(ok).To(BeTrue())
	return in
}

var _ = Describe("Kueue's hold", func() {
	It("holds every kind Kueue holds, once: Held after Hold, and a second Hold changes nothing", func() {
		for _, o := range fixtures.EveryKind("t") {
			obj := o.Queue("q").Obj()
			in := lookup(obj)
			if !workload.Holdable(in) {
				Expect(in.GVK.Kind).To(Equal("CronJob"), "Kueue holds each Job a CronJob makes, not the CronJob")
				continue
			}
			held, missing := workload.Held(obj, in)
			Expect(held).To(BeFalse(), in.GVK.Kind)
			Expect(missing).NotTo(BeEmpty())
			ops, err := workload.Hold(obj, in)
			Expect(err).NotTo(HaveOccurred(), in.GVK.Kind)
			Expect(ops).NotTo(BeEmpty(), in.GVK.Kind)
			held, _ = workload.Held(obj, in)
			Expect(held).To(BeTrue(), in.GVK.Kind)
			again, err := workload.Hold(obj, in)
			Expect(err).NotTo(HaveOccurred())
			Expect(again).To(BeEmpty(), "%s: Hold is idempotent, as Kueue's webhook is", in.GVK.Kind)
		}
	})

	DescribeTable("writes what Kueue v0.19's webhook writes",
		func(obj *unstructured.Unstructured, path []string, want map[string]any) {
			_, err := workload.Hold(obj, lookup(obj))
			Expect(err).NotTo(HaveOccurred())
			got, _, _ := unstructured.NestedMap(obj.Object, path...)
			if diff := cmp.Diff(want, got); diff != "" {
				Fail("(-want +got)\n" + diff)
			}
		},
		Entry("a Job: suspended", fixtures.Job("t", "j").Queue("q").Set(false, "spec", "suspend").Obj(),
			[]string{"spec"}, map[string]any{"suspend": true, "parallelism": int64(1), "completions": int64(1),
				"podReplacementPolicy": "Failed", "template": fixtures.Job("t", "j").Obj().Object["spec"].(map[string]any)["template"]}),
		Entry("a Deployment: its template marked, labelled and queued", fixtures.Deployment("t", "d").Queue("q").Obj(),
			[]string{"spec", "template", "metadata"}, map[string]any{
				"labels":      map[string]any{"app": "d", "kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "q"},
				"annotations": map[string]any{"kueue.x-k8s.io/pod-suspending-parent": "deployment"}}),
		Entry("a StatefulSet: its template marked", fixtures.StatefulSet("t", "s").Queue("q").Obj(),
			[]string{"spec", "template", "metadata"}, map[string]any{
				"labels":      map[string]any{"app": "s"},
				"annotations": map[string]any{"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}}),
		Entry("a LeaderWorkerSet: its worker template marked as a serving pod group", fixtures.LeaderWorkerSet("t", "l").Queue("q").Obj(),
			[]string{"spec", "leaderWorkerTemplate", "workerTemplate", "metadata"}, map[string]any{
				"labels": map[string]any{"kueue.x-k8s.io/queue-name": "q"},
				"annotations": map[string]any{"kueue.x-k8s.io/pod-suspending-parent": "leaderworkerset.x-k8s.io/leaderworkerset",
					"kueue.x-k8s.io/pod-group-serving": "true"}}),
	)

	It("gates a Pod as Kueue's pod webhook does: gate, managed label, finalizer, role hash", func() {
		pod := fixtures.Pod("t", "p").Queue("q").Obj()
		_, err := workload.Hold(pod, lookup(pod))
		Expect(err).NotTo(HaveOccurred())
		Expect(workload.HasSchedulingGate(pod, integrations.KueueAdmissionGate)).To(BeTrue())
		Expect(pod.GetLabels()).To(HaveKeyWithValue("kueue.x-k8s.io/managed", "true"))
		Expect(pod.GetFinalizers()).To(ConsistOf("kueue.x-k8s.io/managed"))
		Expect(pod.GetAnnotations()).To(HaveKeyWithValue("kueue.x-k8s.io/role-hash", Not(BeEmpty())))
	})

	It("refuses to hold what is not an object", func() {
		pod := fixtures.Pod("t", "p").Queue("q").Set("nope", "spec", "containers").Obj()
		_, err := workload.Hold(pod, lookup(pod))
		Expect(err).To(HaveOccurred())
		job := fixtures.Job("t", "j").Queue("q").Obj()
		job.Object["spec"] = "not an object"
		_, err = workload.Hold(job, lookup(job))
		Expect(err).To(HaveOccurred())
	})

	// The mutating path holds these kinds on its own object, trusting that a
	// failed hold changed nothing.
	It("leaves an object it cannot hold as it was, for every kind it holds whole", func() {
		whole := 0
		for _, o := range fixtures.EveryKind("t") {
			in := lookup(o.Obj())
			if !workload.HoldsWhole(in) {
				continue
			}
			whole++
			field, base := in.Suspension.Field, o.Queue("q").Obj()
			for depth := 1; depth < len(field); depth++ {
				obj := base.DeepCopy()
				Expect(unstructured.SetNestedField(obj.Object, "not an object", field[:depth]...)).To(Succeed())
				before := obj.DeepCopy()
				_, err := workload.Hold(obj, in)
				Expect(err).To(HaveOccurred(), "%s with %v not an object", in.GVK.Kind, field[:depth])
				Expect(cmp.Diff(before, obj)).To(BeEmpty(), "%s with %v not an object", in.GVK.Kind, field[:depth])
			}
		}
		Expect(whole).To(BeNumerically(">", 5))
	})
})

var _ = Describe("Kueue's markers", func() {
	It("are found on the object and in its templates", func() {
		dep := fixtures.Deployment("t", "d").Label("kueue.x-k8s.io/managed", "true").
			Set("x", "spec", "template", "metadata", "annotations", "kueue.x-k8s.io/prebuilt-workload-name").Obj()
		var got []string
		for _, m := range workload.KueueMarkers(dep) {
			got = append(got, m.Field().String()+"="+m.Value)
		}
		Expect(got).To(Equal([]string{
			"metadata.labels[kueue.x-k8s.io/managed]=true",
			"spec.template.metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]=x",
		}))
	})

	DescribeTable("on a new object, are Kueue's own only where its hold writes them",
		func(obj *unstructured.Unstructured, want bool) {
			markers := workload.KueueMarkers(obj)
			Expect(markers).To(HaveLen(1))
			Expect(workload.SetByHold(obj, lookup(obj), markers[0])).To(Equal(want))
		},
		Entry("a queued Pod's managed label", fixtures.Pod("t", "p").Queue("q").Label("kueue.x-k8s.io/managed", "true").Obj(), true),
		Entry("a managed label with another value", fixtures.Pod("t", "p").Queue("q").Label("kueue.x-k8s.io/managed", "yes").Obj(), false),
		Entry("a Deployment's parent annotation", fixtures.Deployment("t", "d").Queue("q").
			Set("deployment", "spec", "template", "metadata", "annotations", "kueue.x-k8s.io/pod-suspending-parent").Obj(), true),
		Entry("another kind's parent annotation", fixtures.StatefulSet("t", "s").Queue("q").
			Set("leaderworkerset.x-k8s.io/leaderworkerset", "spec", "template", "metadata", "annotations", "kueue.x-k8s.io/pod-suspending-parent").Obj(), false),
		Entry("a Job naming an existing Workload", fixtures.Job("t", "j").Queue("q").Label("kueue.x-k8s.io/prebuilt-workload-name", "w").Obj(), false),
		Entry("a Job's managed label (Kueue marks Pods only)", fixtures.Job("t", "j").Queue("q").Label("kueue.x-k8s.io/managed", "true").Obj(), false),
	)

	It("report every change an update makes to them", func() {
		old := fixtures.Pod("t", "p").Label("kueue.x-k8s.io/managed", "true").Label("kueue.x-k8s.io/role-hash", "h").Obj()
		updated := fixtures.Pod("t", "p").Label("kueue.x-k8s.io/role-hash", "other").Label("kueue.x-k8s.io/multikueue-origin", "m").Obj()
		var got []string
		for _, m := range workload.ChangedMarkers(old, updated) {
			got = append(got, m.Key+"="+m.Value)
		}
		Expect(got).To(Equal([]string{"kueue.x-k8s.io/managed=true", "kueue.x-k8s.io/multikueue-origin=m", "kueue.x-k8s.io/role-hash=other"}))
		Expect(workload.ChangedMarkers(old, old.DeepCopy())).To(BeEmpty())
	})
})
