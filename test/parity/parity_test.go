package parity

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// decision is what the API server answered a request: the rules its denial
// names, the rules its warnings name, and the answer ("" when admitted).
type decision struct {
	rules, warned map[string]bool
	answer        string
	// warnings are the API server's warnings, verbatim.
	warnings []string
	// stored is a CREATE's object as the API server would store it.
	stored *unstructured.Unstructured
}

var ruleInMessage = regexp.MustCompile(`\[(kueue_guard\.[a-z0-9_.]+)\]`)

func decide(r request) decision {
	warnings.take()
	var err error
	var stored *unstructured.Unstructured
	if r.edit == nil {
		stored = r.obj.DeepCopy()
		err = r.as.Create(ctx, stored, client.DryRunAll)
	} else {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(r.obj.GroupVersionKind())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(r.obj), cur)).To(Succeed())
		r.edit(cur)
		err = r.as.Update(ctx, cur, client.DryRunAll)
	}
	d := decision{rules: map[string]bool{}, warned: map[string]bool{}, stored: stored}
	d.warnings = warnings.take()
	for _, w := range d.warnings {
		for _, m := range ruleInMessage.FindAllStringSubmatch(w, -1) {
			d.warned[m[1]] = true
		}
	}
	if err != nil {
		d.answer = err.Error()
		for _, m := range ruleInMessage.FindAllStringSubmatch(d.answer, -1) {
			d.rules[m[1]] = true
		}
	}
	return d
}

func decideAll(rs []request) []decision {
	out := make([]decision, len(rs))
	for i, r := range rs {
		out[i] = decide(r)
	}
	return out
}

// webhookNamed reports whether the webhook's answer names the rule: its
// denial, or, for a rule the configuration makes a warning
// (integrations.action warn), the rule's warning among the answer's.
func webhookNamed(rule string, r request, w decision) bool {
	if w.rules[rule] {
		return true
	}
	if rule != admission.RuleUnsupportedIntegration {
		return false
	}
	in, ok := integrations.Lookup(r.obj.GroupVersionKind().GroupKind())
	return ok && slices.Contains(w.warnings, admission.NewIntegrationGuard(guardConfig, nil).Warning(in))
}

// twinned are the rules whose twins the chart's apiServerRules install.
func twinned() []admission.Rule {
	var out []admission.Rule
	for _, r := range admission.Rules() {
		if r.CEL != nil && r.CEL.ValuesKey == admission.WorkloadTwinsValuesKey {
			out = append(out, r)
		}
	}
	return out
}

// probe is a request both sides deny (a tenant's Job under a Job it is not
// part of), to tell when a side is in force.
func probe() request {
	return request{name: "probe", as: tenant, obj: withOwner(kinds("probe")[0], owners[1])}
}

// removeWebhooks deletes kueue-guard's webhook configurations of these names.
func removeWebhooks(names ...string) {
	for _, n := range names {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
	}
}

// withoutKueueValidation removes Kueue's validating webhooks for the suite:
// the API server calls validating webhooks in parallel and answers with
// whichever denial comes first, so where Kueue refuses what kueue-guard
// refuses (a running workload's queue change) the webhook side's answer
// would name either. Kueue's mutating webhooks stay: they hold workloads.
func withoutKueueValidation() {
	Expect(admin.Delete(ctx, kq.Validating.DeepCopy())).To(Succeed())
	// Kueue refuses a queued Job whose max-exec-time-seconds is not positive;
	// kueue-guard does not.
	job := fixtures.Job(ns, "probe-kueue-validation").Queue("lq").Label(kueueconstants.MaxExecTimeSecondsLabel, "0").Obj()
	Eventually(func() string { return decide(request{as: admin, obj: job}).answer }, 30*time.Second).
		ShouldNot(ContainSubstring(kueueconstants.MaxExecTimeSecondsLabel), "Kueue's validating webhooks are gone")
}

// restoreWebhooks registers kueue-guard's webhook configurations again and
// waits until the API server calls them: a queued TrainJob that arrives
// unheld (this Kueue does not manage TrainJobs) is refused by the webhook alone.
func restoreWebhooks(m *admissionregistrationv1.MutatingWebhookConfiguration, v *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for _, o := range []client.Object{m.DeepCopy(), v.DeepCopy()} {
		o.SetResourceVersion("")
		o.SetUID("")
		Expect(admin.Create(ctx, o)).To(Succeed())
	}
	unheld := fixtures.TrainJob(ns, "probe-unheld").Queue("own-queue").Obj()
	Eventually(func() map[string]bool { return decide(request{as: tenant, obj: unheld}).rules }, 30*time.Second).
		Should(HaveKey(admission.RuleNotHeld), "the webhooks are back")
}

// twinBindings are the installed twins' bindings, in the order they were
// written, with validationActions as the chart renders them; denyBound are the
// rules bound to Deny.
var (
	twinBindings []renderedBinding
	denyBound    = map[string]bool{}
)

type renderedBinding struct {
	name    string
	actions []string
}

// inWriteOrder are the twinned rules with the probe's last: the API server
// sees one kind of object's writes in order, so once the probe's twin is in
// force, every twin written before it is too.
func inWriteOrder() []admission.Rule {
	rules := twinned()
	i := slices.IndexFunc(rules, func(r admission.Rule) bool { return r.ID == admission.RuleUntrustedOwner })
	return append(slices.Delete(slices.Clone(rules), i, i+1), rules[i])
}

// installValidatingTwins creates the chart's generated policies for the
// twinned rules (default values) with their bindings' validationActions set
// to Warn, and waits until the API server evaluates them. Bound to Deny, the
// API server names only the first policy that denies; bound to Warn, it
// answers every failing policy's message as a warning, so that a request's
// every twin verdict is known.
func installValidatingTwins() {
	for _, r := range inWriteOrder() {
		objs, err := testenv.ChartAdmissionPolicies(values, r.ID)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range objs {
			if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
				rendered, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "validationActions")
				twinBindings = append(twinBindings, renderedBinding{o.GetName(), rendered})
				denyBound[r.ID] = slices.Contains(rendered, "Deny")
				Expect(unstructured.SetNestedStringSlice(o.Object, []string{"Warn"}, "spec", "validationActions")).To(Succeed())
			}
			Expect(admin.Create(ctx, o)).To(Succeed())
		}
	}
	Eventually(func() map[string]bool { return decide(probe()).warned }, time.Minute).
		Should(HaveKey(admission.RuleUntrustedOwner), "the generated policies are in force")
}

// bindAsRendered binds the twins as the chart renders them (Deny, or Warn
// where the rule's configured enforcement warns), in the order they were
// written, and waits until the API server refuses with the last.
func bindAsRendered() {
	for _, rb := range twinBindings {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		Expect(admin.Get(ctx, client.ObjectKey{Name: rb.name}, b)).To(Succeed())
		b.Spec.ValidationActions = nil
		for _, a := range rb.actions {
			b.Spec.ValidationActions = append(b.Spec.ValidationActions, admissionregistrationv1.ValidationAction(a))
		}
		Expect(admin.Update(ctx, b)).To(Succeed())
	}
	Eventually(func() map[string]bool { return decide(probe()).rules }, time.Minute).
		Should(HaveKey(admission.RuleUntrustedOwner), "the twins deny")
}

// installMutatingTwins creates the chart's generated mutating policies and
// waits until the API server applies them.
func installMutatingTwins() {
	objs, err := testenv.ChartMutatingPolicies(values)
	Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		Expect(admin.Create(ctx, o)).To(Succeed())
	}
	Eventually(func() map[string]string {
		return decide(request{as: tenant, obj: kindsIn(defaultingNS, "probe")[0]}).stored.GetLabels()
	}, time.Minute).Should(HaveKey(integrations.QueueNameLabel), func() string {
		out, stderr, _ := env.Kubectl(nil, "get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings", "-o", "yaml")
		return "the generated mutating policies are in force:\n" + out + stderr
	})
}

// grantEverything lets the tenant and the trusted identity write anything:
// only trust tells them apart.
func grantEverything() {
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "parity-everything"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenantUser},
			{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceSystem, Name: trustedSA}}})).To(Succeed())
}

var _ = Describe("the API server's twins decide as the webhook", func() {
	It("on every request of the corpus, rule by rule", func() {
		Expect(len(corpus)).To(BeNumerically(">", 300))
		// The backstop's creates are compared where nothing labelled them.
		sets := []struct {
			reqs               []request
			webhook, apiServer []decision
		}{{corpus, webhook, apiServer}, {backstopCorpus, backstopWebhook, backstopAPIServer},
			{defaultingCorpus, defaultingWebhook, defaultingAPIServer}}
		var table strings.Builder
		fmt.Fprintf(&table, "%-36s %8s %8s %8s\n", "rule", "requests", "violated", "passed")
		for _, rule := range twinned() {
			denied, admitted := 0, 0
			for _, set := range sets {
				for i, r := range set.reqs {
					w, a := set.webhook[i], set.apiServer[i]
					also := slices.ContainsFunc(rule.CEL.AlsoUnder, func(id string) bool { return w.rules[id] })
					// The twin denies what the webhook denies under the rule, and only
					// what it denies under it or under a rule that judges the same
					// request while the cluster state says so.
					Expect(a.warned[rule.ID]).To(Equal(webhookNamed(rule.ID, r, w) || (also && a.warned[rule.ID])),
						"%s: %s\n  webhook: %s %v\n  API server: %s %v %v", rule.ID, r.name, w.answer, w.warnings, a.answer,
						slices.Sorted(maps.Keys(a.warned)), storedOutcome(a))
					if a.warned[rule.ID] {
						denied++
					} else {
						admitted++
					}
				}
			}
			Expect(denied).To(BeNumerically(">", 0), "%s: the corpus has requests the rule denies", rule.ID)
			fmt.Fprintf(&table, "%-36s %8d %8d %8d\n", rule.ID, denied+admitted, denied, admitted)
		}
		AddReportEntry("decisions", table.String())
	})

	It("refuse, bound as the chart binds them, exactly the requests a Deny-bound twin warns about", func() {
		for i, r := range corpus {
			a, d := apiServer[i], apiServerDenies[i]
			// Refused by the API server itself (an immutable field) in both passes.
			refused := a.answer != ""
			for id := range a.warned {
				refused = refused || denyBound[id]
			}
			if refused {
				Expect(d.answer).NotTo(BeEmpty(), "%s: a Deny-bound twin warned", r.name)
			} else {
				Expect(d.answer).To(BeEmpty(), "%s: no Deny-bound twin warned", r.name)
			}
			for id := range d.rules {
				Expect(a.warned).To(HaveKey(id), "%s: %s", r.name, d.answer)
			}
		}
	})

	It("names every other built-in rule, and why the webhook alone judges it", func() {
		var webhookOnly []string
		for _, r := range admission.Rules() {
			if r.CEL == nil {
				Expect(r.WebhookOnly).NotTo(BeEmpty(), r.ID)
				webhookOnly = append(webhookOnly, r.ID+": "+r.WebhookOnly)
			}
		}
		AddReportEntry("rules without a twin", strings.Join(webhookOnly, "\n"))
		Expect(webhookOnly).To(HaveLen(len(admission.Rules())-len(twinned())-2), "the two twins outside apiServerRules judge what webhooks never see")
	})
})

// storedOutcome is outcome for a CREATE's decision, "" for an UPDATE's.
func storedOutcome(d decision) string {
	if d.stored == nil {
		return ""
	}
	return outcome(d.stored)
}

// outcome is what defaulting left on a stored object: queue, priority, the
// defaulted-by annotation, and whether it is held.
func outcome(u *unstructured.Unstructured) string {
	in, ok := integrations.Lookup(u.GroupVersionKind().GroupKind())
	if !ok {
		return u.GetKind()
	}
	// Held as Kueue's webhook holds the kind (a Deployment's pod template
	// marked, a Pod gated, a Job suspended), by the Go hold's own reading.
	held := "not held (Kueue does not hold the kind)"
	if workload.Holdable(in) {
		held = "held"
		if ok, missing := workload.Held(u, in); !ok {
			held = "not held: " + missing
		}
	}
	ann, _ := workload.Annotations(u, in)
	return fmt.Sprintf("queue=%q priority=%q defaulted-by=%q %s", workload.QueueName(u, in),
		workload.PriorityClass(u, in), ann[admission.DefaultedByAnnotation], held)
}

var _ = Describe("the API server's default-queue twin", func() {
	It("labels, annotates and holds a new workload as the webhook does, for every kind it covers", func() {
		covered := admission.MutatingTwins()[0].MatchConditions[0].Expression
		var table strings.Builder
		same, skipped := 0, map[string]bool{}
		for i, r := range defaultingCorpus {
			w, a := defaultingWebhook[i], defaultingAPIServer[i]
			if w.answer != "" || a.answer != "" {
				// Refused on one side by a rule the defaulting twin does not
				// cover (not_held, for a kind this Kueue does not manage).
				fmt.Fprintf(&table, "%-55s not compared: refused (%s)\n", r.name, strings.Join(slices.Sorted(maps.Keys(w.rules)), ", "))
				continue
			}
			if in, _ := integrations.Lookup(r.obj.GroupVersionKind().GroupKind()); !strings.Contains(covered, "'"+in.GVK.Group+"/"+in.GVK.Kind+"'") {
				skipped[r.obj.GetKind()] = true
				continue
			}
			Expect(outcome(a.stored)).To(Equal(outcome(w.stored)), "%s: webhook %s, API server %s", r.name, outcome(w.stored), outcome(a.stored))
			fmt.Fprintf(&table, "%-55s %s\n", r.name, outcome(a.stored))
			same++
		}
		AddReportEntry("defaulting, the same on both sides", table.String())
		AddReportEntry("kinds the webhook alone defaults", fmt.Sprint(slices.Sorted(maps.Keys(skipped))))
		Expect(same).To(BeNumerically(">=", 37))
	})
})

var _ = Describe("the webhooks and the API server's twins together, as the chart installs them", func() {
	It("admit, refuse, label and hold exactly what the webhooks alone do", func() {
		for i, r := range corpus {
			admitted := BeEmpty()
			if webhook[i].answer != "" {
				admitted = Not(BeEmpty())
			}
			Expect(both[i].answer).To(admitted, "%s\n  webhook: %s\n  both: %s", r.name, webhook[i].answer, both[i].answer)
		}
		compared := 0
		for i, r := range defaultingCorpus {
			w, b := defaultingWebhook[i], defaultingBoth[i]
			if w.answer != "" {
				Expect(b.answer).NotTo(BeEmpty(), "%s\n  webhook: %s", r.name, w.answer)
				continue
			}
			Expect(b.answer).To(BeEmpty(), "%s: admitted with the webhooks alone", r.name)
			Expect(outcome(b.stored)).To(Equal(outcome(w.stored)), "%s", r.name)
			compared++
		}
		AddReportEntry("with both", fmt.Sprintf("%d requests decided alike, %d stored objects alike", len(corpus)+len(defaultingCorpus), compared))
	})
})
