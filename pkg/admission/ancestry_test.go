package admission_test

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// linked gives obj a UID and, when owner is set, a controller reference to it.
func linked(obj *unstructured.Unstructured, uid string, owner *unstructured.Unstructured) *unstructured.Unstructured {
	obj.SetUID(types.UID(uid))
	if owner != nil {
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(),
			Name: owner.GetName(), UID: owner.GetUID(), Controller: new(true)}})
	}
	return obj
}

// Kueue's ancestry walk (jobframework.FindAncestorJobManagedByKueue), from the
// cache: a trusted controller's child that carries a queue label of its own
// reaches the server, and is a part only when some ancestor is a workload
// Kueue manages. A part is left alone; anything else is judged, and a child
// that is not held is then refused (kueue_guard.not_held).
var _ = Describe("Kueue's ancestry walk", func() {
	const jobsetController = "system:serviceaccount:jobset-system:jobset-controller-manager"
	const team = "walk"
	queuedJS := func(name, uid string) *unstructured.Unstructured {
		return linked(fixtures.JobSet(team, name).Queue("q").Obj(), uid, nil)
	}
	unqueuedJS := func(name, uid string) *unstructured.Unstructured {
		return linked(fixtures.JobSet(team, name).Obj(), uid, nil)
	}
	// child is a Job the JobSet controller makes, with a queue label the
	// tenant wrote in the JobSet's template, not held by Kueue.
	child := func(owner *unstructured.Unstructured) *guard.Request {
		obj := linked(fixtures.Job(team, "child").Queue("q").Set(false, "spec", "suspend").Obj(), "", owner)
		return as(create(obj), jobsetController)
	}
	base := func(objs ...client.Object) []client.Object {
		return append([]client.Object{ns(team, nil, nil), lq(team, "q")}, objs...)
	}
	trainJob := linked(fixtures.TrainJob(team, "tj").Queue("q").Obj(), "uid-tj", nil)
	stale := queuedJS("stale", "uid-stale")

	DescribeTable("a labelled child is a part only where Kueue counts it as one",
		func(owner *unstructured.Unstructured, cached []client.Object, part bool) {
			d := validateUnheld(built(config.Default()), view(base(cached...)...), child(owner))
			if part {
				Expect(d.Violations).To(BeEmpty(), "part of a workload Kueue manages: not judged")
				return
			}
			Expect(rules(d)).To(ContainElement(guard.RuleNotHeld+"/deny"), "judged as a workload of its own")
		},
		Entry("under a queued JobSet", queuedJS("js", "uid-js"), []client.Object{queuedJS("js", "uid-js")}, true),
		Entry("under an unqueued JobSet, which Kueue does not manage",
			unqueuedJS("js", "uid-js"), []client.Object{unqueuedJS("js", "uid-js")}, false),
		Entry("under an unqueued JobSet of a queued TrainJob: Kueue walks on up",
			unqueuedJS("js", "uid-js"), []client.Object{linked(unqueuedJS("js", "uid-js"), "uid-js", trainJob), trainJob}, true),
		Entry("under a queued JobSet whose kind Kueue's Configuration does not enable",
			queuedJS("js", "uid-js"), []client.Object{queuedJS("js", "uid-js"), kueueConfigMap("batch/job")}, false),
		Entry("under a JobSet that is not the one the reference names",
			linked(stale.DeepCopy(), "uid-gone", nil), []client.Object{stale}, false),
	)

	It("holds a child of an unqueued JobSet when Kueue manages jobs without a queue name", func() {
		holds := kueueConfigMap("batch/job", "jobset.x-k8s.io/jobset")
		holds.Data[cluster.KueueConfigKey] += "manageJobsWithoutQueueName: true\n"
		js := unqueuedJS("js", "uid-js")
		d := validateUnheld(built(config.Default()), view(base(js, holds)...), child(js))
		Expect(d.Violations).To(BeEmpty())
	})

	It("refuses, to be retried, a child whose owner it has not seen, and owners in a cycle", func() {
		p := built(config.Default())
		_, err := p.Validate(context.Background(), child(queuedJS("ghost", "uid-ghost")), view(base()...))
		Expect(err).To(MatchError(ContainSubstring("has not seen JobSet walk/ghost")))

		a := linked(unqueuedJS("a", "uid-a"), "uid-a", trainJob)
		loop := linked(fixtures.TrainJob(team, "tj").Obj(), "uid-tj", a)
		_, err = p.Validate(context.Background(), child(a), view(base(a, loop)...))
		Expect(err).To(MatchError(ContainSubstring("form a cycle")))
	})

	It("skips an unlabelled child without a lookup, as the webhooks' match condition does", func() {
		req := child(queuedJS("ghost", "uid-ghost"))
		req.Object.SetLabels(nil)
		d, err := built(config.Default()).Validate(context.Background(), req, view(base()...))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Violations).To(BeEmpty())
	})
})
