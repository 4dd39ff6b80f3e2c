package faults

import (
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// drillRequest is one request of the outage drill: what a tenant sends while no
// kueue-guard replica answers.
type drillRequest struct {
	what string
	// twin is the rule whose API server twin must refuse it in either mode; ""
	// for a request only the webhook judges.
	twin string
	send func() error
	// created is a create's object, created for real when the outage admits it.
	created *unstructured.Unstructured
}

// The outage drill: every kueue-guard replica down, under both availability
// modes the chart offers, with the twins it installs (apiServerRules).
var _ = Describe("a kueue-guard outage drill, under both availability modes", Ordered, func() {
	var (
		ns       string
		requests []drillRequest
	)

	BeforeAll(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "drill-"}}
		Expect(env.Client.Create(ctx, n)).To(Succeed())
		ns = n.Name
		installTwins(map[string]any{"availability": "failOpen"})
		requests = drillRequests(ns)
		// Annotated once the requests' objects are stored (some start unqueued):
		// from now on the namespace's workloads must be queued.
		n.Annotations = map[string]string{admission.DefaultQueueAnnotation: "team-queue"}
		Expect(env.Client.Update(ctx, n)).To(Succeed())
		for _, r := range requests {
			if r.twin == admission.RuleQueueLabelRemoved {
				Eventually(r.send, 30*time.Second).Should(MatchError(ContainSubstring("["+r.twin+"]")), "the API server sees the annotation")
			}
		}
	})

	drill := func(mode string) {
		setWorkloadFailurePolicy(mode)
		// The API server may lag the configuration change by a moment.
		Eventually(func() error { return env.Client.Create(ctx, queuedJob(ns, "probe"), client.DryRunAll) }, 30*time.Second).
			Should(WithTransform(func(err error) bool { return err == nil }, Equal(mode == "failOpen")))
		refused, admitted, held := 0, 0, 0
		var twins int
		for _, r := range requests {
			err := r.send()
			if err != nil {
				refused++
			} else {
				admitted++
			}
			if r.twin != "" {
				twins++
				Expect(err).To(MatchError(ContainSubstring("["+r.twin+"]")), "%s: %s, refused by the API server's twin", mode, r.what)
				held++
				continue
			}
			if mode == "failClosed" {
				Expect(err).To(HaveOccurred(), "%s: %s is not admitted unjudged", mode, r.what)
			} else {
				Expect(err).NotTo(HaveOccurred(), "%s: %s is admitted (the webhook fails open)", mode, r.what)
			}
		}
		// A new unqueued Job in a namespace with a default queue: the API
		// server's default-queue twin labels and suspends it.
		defaulted := func() (*unstructured.Unstructured, error) {
			u := fixtures.Job(ns, "defaulted").Obj()
			return u, env.Client.Create(ctx, u, client.DryRunAll)
		}
		if mode == "failOpen" {
			// The mutating policy was written before the validating ones, but the
			// API server watches the two kinds apart.
			Eventually(func(g Gomega) {
				unqueued, err := defaulted()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(unqueued.GetLabels()).To(HaveKeyWithValue(integrations.QueueNameLabel, "team-queue"))
				g.Expect(unqueued.Object["spec"]).To(HaveKeyWithValue("suspend", true), "held until Kueue admits it")
			}, 30*time.Second).Should(Succeed())
		} else {
			_, err := defaulted()
			Expect(err).To(HaveOccurred())
		}
		// System namespaces are untouched in either mode.
		Expect(env.Client.Create(ctx, fixtures.Deployment(metav1.NamespaceSystem, "drill").Obj(), client.DryRunAll)).To(Succeed())
		AddReportEntry("outage drill, "+mode, fmt.Sprintf(
			"no replica serving: %d tenant requests, %d refused, %d admitted; the twins' guarantees held on %d of %d; "+
				"a new unqueued Job %s; a Deployment in kube-system admitted",
			len(requests), refused, admitted, held, twins,
			map[bool]string{true: "labelled with the namespace's default queue and suspended", false: "refused"}[mode == "failOpen"]))
	}

	It("fails closed: every tenant request is refused, the twins name the tricks they cover", func() { drill("failClosed") })
	It("fails open: the twins still refuse the tricks they cover, the rest is admitted unjudged", func() { drill("failOpen") })

	It("after a fail-open outage, the audit finds nothing admitted that a twin should have refused", func() {
		setWorkloadFailurePolicy("failOpen")
		Eventually(func() error { return env.Client.Create(ctx, queuedJob(ns, "probe"), client.DryRunAll) }, 30*time.Second).
			Should(Succeed(), "the webhook fails open")
		admitted := map[string]bool{}
		for _, r := range requests {
			if r.created != nil {
				Expect(env.Client.Create(ctx, r.created.DeepCopy())).To(Succeed(), "%s: admitted during the outage", r.what)
				admitted[r.created.GetKind()+"/"+r.created.GetName()] = true
			}
		}
		// kueue-guard back: the audit judges what the outage let in.
		dir := GinkgoT().TempDir()
		_, err := testenv.CopyShippedPolicies(dir)
		Expect(err).NotTo(HaveOccurred())
		_, report, stderr, err := env.Audit(ctx, "-n", ns, "--policies", dir)
		Expect(err).NotTo(HaveOccurred(), stderr)
		twinned := map[string]bool{}
		for _, r := range admission.Rules() {
			twinned[r.ID] = r.CEL != nil && r.CEL.ValuesKey == admission.WorkloadTwinsValuesKey
		}
		found := map[string]int{}
		audited := 0
		for _, o := range report.Objects {
			if !admitted[o.Kind+"/"+o.Name] {
				continue
			}
			audited++
			for _, f := range o.Findings {
				Expect(twinned[f.Rule]).To(BeFalse(), "%s %s admitted during the outage breaks %s, which a twin enforces", o.Kind, o.Name, f.Rule)
				found[f.Rule+" ("+f.Enforcement+")"]++
			}
		}
		Expect(audited).To(Equal(len(admitted)), "the audit judged every workload the outage admitted")
		AddReportEntry("after the outage, the audit of what it admitted", fmt.Sprintf(
			"%d workloads admitted unjudged; findings by rule (none a twin's): %v", audited, found))
	})
})

// installTwins creates the chart's workload twins (validating and mutating),
// removed when the container ends, and waits until the API server enforces
// the last one written: it sees the policies' writes in order, so every
// policy written before is in force too.
func installTwins(values map[string]any) {
	GinkgoHelper()
	maps, err := testenv.ChartMutatingPolicies(values)
	Expect(err).NotTo(HaveOccurred())
	for _, o := range maps {
		Expect(env.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o))).To(Succeed()) })
	}
	for _, r := range admission.Rules() {
		if r.CEL == nil || r.CEL.ValuesKey != admission.WorkloadTwinsValuesKey {
			continue
		}
		objs, err := testenv.ChartAdmissionPolicies(values, r.ID)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range objs {
			Expect(env.Client.Create(ctx, o)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o))).To(Succeed()) })
		}
	}
	last := admission.Rules()[len(admission.Rules())-1]
	Expect(last.ID).To(Equal(admission.RuleUntrustedOwner), "the probe's twin is written last")
	probe := fixtures.Job(metav1.NamespaceDefault, "twin-probe").ControlledBy("batch/v1", "Job", "owner").Obj()
	Eventually(func() error { return env.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll) }, time.Minute).
		Should(MatchError(ContainSubstring("["+admission.RuleUntrustedOwner+"]")), "the twins are in force")
}

// setWorkloadFailurePolicy gives the registered workload validating webhook the
// failure policy the chart renders for the availability mode, and restores it
// when the spec ends.
func setWorkloadFailurePolicy(mode string) {
	GinkgoHelper()
	_, rendered, err := testenv.ChartWebhooks(map[string]any{"availability": mode})
	Expect(err).NotTo(HaveOccurred())
	want := rendered[0].Webhooks[0]
	cur := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: rendered[0].Name}, cur)).To(Succeed())
	saved := cur.DeepCopy()
	for i := range cur.Webhooks {
		if cur.Webhooks[i].Name == want.Name {
			cur.Webhooks[i].FailurePolicy = want.FailurePolicy
		}
	}
	Expect(env.Client.Update(ctx, cur)).To(Succeed())
	DeferCleanup(func() {
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(saved), cur)).To(Succeed())
		cur.Webhooks = saved.Webhooks
		Expect(env.Client.Update(ctx, cur)).To(Succeed())
	})
}

func queuedJob(ns, name string) *unstructured.Unstructured {
	return fixtures.Job(ns, name).Queue("team-queue").Obj()
}

// drillRequests are a tenant's requests (the suite's client is not a trusted
// controller): tricks the twins cover, and workloads only the webhook judges.
func drillRequests(ns string) []drillRequest {
	owned := func(o fixtures.Object, apiVersion, kind string) *unstructured.Unstructured {
		obj := o.Obj()
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner",
			UID: "00000000-0000-0000-0000-0000000000d1", Controller: new(true)}})
		return obj
	}
	dryCreate := func(obj *unstructured.Unstructured) func() error {
		return func() error { return env.Client.Create(ctx, obj.DeepCopy(), client.DryRunAll) }
	}
	// Held, queued workloads, stored before the outage while a replica served.
	held := fixtures.Job(ns, "held").Queue("team-queue").Held().Obj()
	gated := fixtures.Pod(ns, "gated").Queue("team-queue").Held().Obj()
	unqueued := fixtures.Job(ns, "held-unqueued").Held().Obj()
	running := fixtures.Job(ns, "running").Obj()
	cfg := testenv.ConfigWithoutKueue()
	cfg.Policies.Directory = GinkgoT().TempDir()
	srv, err := env.StartServer(ctx, env.Config, cfg)
	Expect(err).NotTo(HaveOccurred())
	for _, o := range []*unstructured.Unstructured{held, gated, unqueued, running} {
		Expect(env.Client.Create(ctx, o)).To(Succeed(), "stored before the outage")
	}
	Expect(srv.Stop()).To(Succeed())
	update := func(obj *unstructured.Unstructured, edit func(fixtures.Object)) func() error {
		return func() error {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(obj.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
				return err
			}
			edit(fixtures.Object{Unstructured: cur})
			return env.Client.Update(ctx, cur, client.DryRunAll)
		}
	}
	resume := func(obj *unstructured.Unstructured) func() error {
		return update(obj, func(o fixtures.Object) { o.Released() })
	}
	dequeue := func(o fixtures.Object) {
		l := o.GetLabels()
		delete(l, integrations.QueueNameLabel)
		o.SetLabels(l)
	}
	big := fixtures.Job(ns, "big").Queue("team-queue").Requests("nvidia.com/gpu", "64").Obj()
	mismatch := queuedJob(ns, "mismatch")
	Expect(unstructured.SetNestedField(mismatch.Object, "other-queue", "spec", "template", "metadata", "labels",
		integrations.QueueNameLabel)).To(Succeed())
	create := func(what string, obj *unstructured.Unstructured) drillRequest {
		return drillRequest{what: what, send: dryCreate(obj), created: obj}
	}
	return []drillRequest{
		{what: "a Job under a Job it is not part of", twin: admission.RuleUntrustedOwner,
			send: dryCreate(owned(fixtures.Job(ns, "under-job"), "batch/v1", "Job"))},
		{what: "a Pod under a ReplicaSet it did not come from", twin: admission.RuleUntrustedOwner,
			send: dryCreate(owned(fixtures.Pod(ns, "under-rs"), "apps/v1", "ReplicaSet"))},
		{what: "a JobSet under a JobSet", twin: admission.RuleUntrustedOwner,
			send: dryCreate(owned(fixtures.JobSet(ns, "under-js"), "jobset.x-k8s.io/v1alpha2", "JobSet"))},
		{what: "resuming a held, queued Job", twin: admission.RuleOnlyKueueReleases, send: resume(held)},
		{what: "removing Kueue's gate from a queued Pod", twin: admission.RuleOnlyKueueReleases, send: resume(gated)},
		{what: "taking a held Job out of its queue", twin: admission.RuleQueueLabelRemoved, send: update(held, dequeue)},
		{what: "resuming a held Job that has no queue", twin: admission.RuleResumeWithoutQueue, send: resume(unqueued)},
		{what: "queueing a running Job", twin: admission.RuleImmutableQueueName,
			send: update(running, func(o fixtures.Object) { o.Queue("team-queue") })},
		{what: "a queued PyTorchJob, a kind the managed Kueue install does not integrate", twin: admission.RuleUnsupportedIntegration,
			send: dryCreate(fixtures.PyTorchJob(ns, "legacy").Queue("team-queue").Obj())},
		{what: "a queued Job whose pod template names another queue", twin: admission.RuleLabelMismatch, send: dryCreate(mismatch)},
		{what: "pointing a held Job at another Workload (prebuilt-workload-name)", twin: admission.RuleKueueMarker,
			send: update(held, func(o fixtures.Object) { o.Label(kueueconstants.PrebuiltWorkloadLabel, "someone-elses") })},
		create("a queued Job", queuedJob(ns, "plain")),
		create("an unqueued Job", fixtures.Job(ns, "unqueued").Obj()),
		create("a queued Job asking for 64 GPUs (a policy's)", big),
		create("a Deployment", fixtures.Deployment(ns, "web").Obj()),
	}
}
