package admission_test

import (
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// away is a view in which Kueue is not serving.
type away struct{ cluster.View }

func (away) KueueServing() bool { return false }

var _ = Describe("while Kueue is not serving", func() {
	gone := func() cluster.View { return away{view(ns("t", nil, nil), lq("t", "q"))} }
	absentRules := func(d *guard.Decision) []string {
		return slices.DeleteFunc(rules(d), func(r string) bool { return r != guard.RuleKueueAbsent+"/warn" && r != guard.RuleKueueAbsent+"/deny" })
	}
	suspendedAt := func(obj *unstructured.Unstructured, path ...string) bool {
		v, _, _ := unstructured.NestedBool(obj.Object, path...)
		return v
	}

	DescribeTable("a new queued workload is created suspended, where its kind keeps that",
		func(obj *unstructured.Unstructured, path []string) {
			req := create(obj)
			d := mutate(built(config.Default()), gone(), req)
			Expect(absentRules(d)).To(Equal([]string{guard.RuleKueueAbsent + "/warn"}))
			Expect(d.Warnings).To(ContainElement(ContainSubstring("Kueue is not serving")))
			out := result(req, d)
			Expect(suspendedAt(out, path...)).To(BeTrue())
			Expect(validate(built(config.Default()), gone(), create(out)).Allowed()).To(BeTrue(), "the validating backstop admits it")
		},
		Entry("a Job asking to run", fixtures.Job("t", "j").Queue("q").Set(false, "spec", "suspend").Obj(), []string{"spec", "suspend"}),
		Entry("a JobSet", fixtures.JobSet("t", "js").Queue("q").Obj(), []string{"spec", "suspend"}),
		Entry("an MPIJob", fixtures.MPIJob("t", "m").Queue("q").Obj(), []string{"spec", "runPolicy", "suspend"}),
		Entry("a CronJob: the Jobs it creates", fixtures.CronJob("t", "c").Queue("q").Obj(), []string{"spec", "jobTemplate", "spec", "suspend"}),
	)

	It("gates a new queued Pod and marks it as Kueue's", func() {
		req := create(fixtures.Pod("t", "p").Queue("q").Obj())
		d := mutate(built(config.Default()), gone(), req)
		out := result(req, d)
		gates, _, _ := unstructured.NestedSlice(out.Object, "spec", "schedulingGates")
		Expect(gates).To(ContainElement(map[string]any{"name": integrations.KueueAdmissionGate}))
		Expect(out.GetLabels()).To(HaveKeyWithValue("kueue.x-k8s.io/managed", "true"))
		Expect(validate(built(config.Default()), gone(), create(out)).Allowed()).To(BeTrue())
	})

	It("denies a queued kind that cannot wait suspended", func() {
		d := mutate(built(config.Default()), gone(), create(fixtures.Deployment("t", "d").Queue("q").Obj()))
		Expect(absentRules(d)).To(Equal([]string{guard.RuleKueueAbsent + "/deny"}))
		Expect(d.Violations[len(d.Violations)-1].Message).To(ContainSubstring("a Deployment cannot be created suspended"))
	})

	It("denies on the validating path a queued workload that reached it running (another mutating webhook resumed it)", func() {
		d := validateUnheld(built(config.Default()), gone(), create(fixtures.Job("t", "j").Queue("q").Set(false, "spec", "suspend").Obj()))
		Expect(absentRules(d)).To(Equal([]string{guard.RuleKueueAbsent + "/deny"}))
	})

	It("denies resuming a suspended queued workload, and lets it be edited otherwise", func() {
		old := fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Obj()
		resumed := old.DeepCopy()
		Expect(unstructured.SetNestedField(resumed.Object, false, "spec", "suspend")).To(Succeed())
		d := validate(built(config.Default()), gone(), update(old, resumed))
		Expect(absentRules(d)).To(Equal([]string{guard.RuleKueueAbsent + "/deny"}))
		Expect(d.Violations[len(d.Violations)-1].Message).To(ContainSubstring("cannot be resumed until Kueue is back"))

		relabelled := old.DeepCopy()
		relabelled.SetAnnotations(map[string]string{"note": "x"})
		Expect(absentRules(validate(built(config.Default()), gone(), update(old, relabelled)))).To(BeEmpty())
	})

	It("denies scaling up a queued StatefulSet or LeaderWorkerSet, whose new pods only Kueue would gate, and lets it scale down", func() {
		// An install whose Kueue integrates LeaderWorkerSet (the managed one
		// does not: see the next spec).
		cfg := config.Default()
		cfg.InstallProfile = config.ProfileOSS
		cfg.Controllers.Allowed = nil
		cfg.Integrations.Frameworks = []string{"statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"}
		for _, obj := range []*unstructured.Unstructured{
			fixtures.StatefulSet("t", "s").Queue("q").Set(int64(0), "spec", "replicas").Obj(),
			fixtures.LeaderWorkerSet("t", "l").Queue("q").Obj(),
		} {
			grown := obj.DeepCopy()
			Expect(unstructured.SetNestedField(grown.Object, int64(2), "spec", "replicas")).To(Succeed())
			d := validate(built(cfg), gone(), update(obj, grown))
			Expect(absentRules(d)).To(Equal([]string{guard.RuleKueueAbsent + "/deny"}), obj.GetKind())
			Expect(d.Violations[len(d.Violations)-1].Message).To(ContainSubstring("scale it up once Kueue is back"))
			Expect(absentRules(validate(built(cfg), gone(), update(grown, obj)))).To(BeEmpty(), "scaling down")
		}
		dep := fixtures.Deployment("t", "d").Queue("q").Obj()
		grown := dep.DeepCopy()
		Expect(unstructured.SetNestedField(grown.Object, int64(3), "spec", "replicas")).To(Succeed())
		Expect(absentRules(validate(built(config.Default()), gone(), update(dep, grown)))).To(BeEmpty(), "a Deployment's new Pods are gated one by one")
	})

	It("holds nothing of a kind the install's Kueue does not integrate: Kueue would never release it", func() {
		cfg := config.Default()
		cfg.Integrations.Action = config.IntegrationActionWarn
		req := create(fixtures.AppWrapper("t", "a").Queue("q").Obj())
		Expect(mutate(built(cfg), gone(), req).Patch).To(BeEmpty())
		Expect(absentRules(validateUnheld(built(cfg), gone(), req))).To(BeEmpty())
		lws := fixtures.LeaderWorkerSet("t", "l").Queue("q").Obj()
		grown := lws.DeepCopy()
		Expect(unstructured.SetNestedField(grown.Object, int64(2), "spec", "replicas")).To(Succeed())
		Expect(absentRules(validate(built(cfg), gone(), update(lws, grown)))).To(BeEmpty())
	})

	It("denies every new queued workload with kueueAbsent: deny, and does nothing with allow", func() {
		deny := config.Default()
		deny.KueueAbsent = config.KueueAbsentDeny
		d := mutate(built(deny), gone(), create(fixtures.Job("t", "j").Queue("q").Obj()))
		Expect(absentRules(d)).To(Equal([]string{guard.RuleKueueAbsent + "/deny"}))

		allow := config.Default()
		allow.KueueAbsent = config.KueueAbsentAllow
		req := create(fixtures.Job("t", "j").Queue("q").Set(false, "spec", "suspend").Obj())
		d = mutate(built(allow), gone(), req)
		Expect(absentRules(d)).To(BeEmpty())
		Expect(suspendedAt(result(req, d), "spec", "suspend")).To(BeFalse())
	})

	It("leaves alone unqueued workloads and the parts of another workload", func() {
		req := create(fixtures.Job("t", "j").Set(false, "spec", "suspend").Obj())
		Expect(absentRules(mutate(built(config.Default()), gone(), req))).To(BeEmpty())

		child := create(fixtures.Pod("t", "p").ControlledBy("batch/v1", "Job", "j").Obj())
		child.UserInfo = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:job-controller"}
		Expect(absentRules(mutate(built(config.Default()), gone(), child))).To(BeEmpty())
	})

	It("suspends what a trusted controller creates as a workload of its own, and lets it resume what it admits", func() {
		cronJobs := create(fixtures.Job("t", "j-28").Queue("q").Set(false, "spec", "suspend").ControlledBy("batch/v1", "CronJob", "c").Obj())
		cronJobs.UserInfo = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:cronjob-controller"}
		d := mutate(built(config.Default()), gone(), cronJobs)
		Expect(absentRules(d)).To(Equal([]string{guard.RuleKueueAbsent + "/warn"}))
		Expect(suspendedAt(result(cronJobs, d), "spec", "suspend")).To(BeTrue())

		scaledUp := create(fixtures.Pod("t", "web-7d9f-x2").Queue("q").ControlledBy("apps/v1", "ReplicaSet", "web-7d9f").Obj())
		scaledUp.UserInfo = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller"}
		out := result(scaledUp, mutate(built(config.Default()), gone(), scaledUp))
		gates, _, _ := unstructured.NestedSlice(out.Object, "spec", "schedulingGates")
		Expect(gates).To(ContainElement(map[string]any{"name": integrations.KueueAdmissionGate}))

		old := fixtures.Job("t", "j").Queue("q").Set(true, "spec", "suspend").Obj()
		resumed := old.DeepCopy()
		Expect(unstructured.SetNestedField(resumed.Object, false, "spec", "suspend")).To(Succeed())
		byKueue := update(old, resumed)
		byKueue.UserInfo = authenticationv1.UserInfo{Username: "system:serviceaccount:kueue-system:kueue-controller-manager"}
		Expect(absentRules(validate(built(config.Default()), gone(), byKueue))).To(BeEmpty())
	})

	It("leaves the hold to kueue-hold, Kueue's own, while Kueue serves", func() {
		req := create(fixtures.Job("t", "j").Queue("q").Set(false, "spec", "suspend").Obj())
		d := mutate(built(config.Default()), kueueFirst{view(ns("t", nil, nil), lq("t", "q"))}, req)
		Expect(absentRules(d)).To(BeEmpty())
		Expect(d.AuditAnnotations).NotTo(HaveKey("kueue-absent"))
		Expect(d.AuditAnnotations).To(HaveKeyWithValue("kueue-hold", "set"))
		Expect(suspendedAt(result(req, d), "spec", "suspend")).To(BeTrue())
	})
})

// uninstalled is a view in which Kueue's API is gone (its CRDs deleted) after
// the namespace "owed" had Kueue's default LocalQueue.
type uninstalled struct{ cluster.View }

func (uninstalled) KueueServing() bool { return false }

func (uninstalled) QueuesKnown() bool { return false }

func (uninstalled) KueueDefaultQueueRemembered(ns string) bool { return ns == "owed" }

var _ = Describe("while Kueue's API is gone", func() {
	v := func() cluster.View { return uninstalled{view(ns("owed", nil, nil), ns("never", nil, nil))} }

	It("still owes a namespace the default LocalQueue it had, and holds the workload for it", func() {
		req := create(fixtures.Job("owed", "j").Obj())
		d := workloadDecision(built(config.Default()), v(), req)
		Expect(d.Allowed()).To(BeTrue(), "%v", d.Violations)
		out := result(req, d)
		Expect(out.GetLabels()).To(HaveKeyWithValue(integrations.QueueNameLabel, "default"))
		suspended, _, _ := unstructured.NestedBool(out.Object, "spec", "suspend")
		Expect(suspended).To(BeTrue(), "held until Kueue is back to admit it")
	})

	It("refuses an unqueued workload there when defaulting did not run", func() {
		d := validateUnheld(built(config.Default()), v(), create(fixtures.Job("owed", "j").Obj()))
		Expect(rules(d)).To(ContainElement(guard.RuleDefaultingBackstop + "/deny"))
	})

	It("owes nothing where Kueue's default LocalQueue never was", func() {
		req := create(fixtures.Job("never", "j").Obj())
		d := workloadDecision(built(config.Default()), v(), req)
		Expect(d.Allowed()).To(BeTrue())
		Expect(result(req, d).GetLabels()).NotTo(HaveKey(integrations.QueueNameLabel))
	})
})
