package parity

import (
	"fmt"
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

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// decision is what the API server answered a request: the rules its denial
// names, and the answer ("" when admitted).
type decision struct {
	rules  map[string]bool
	answer string
}

var ruleInMessage = regexp.MustCompile(`\[(kueue_guard\.[a-z0-9_.]+)\]`)

func decide(r request) decision {
	var err error
	if r.edit == nil {
		err = r.as.Create(ctx, r.obj.DeepCopy(), client.DryRunAll)
	} else {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(r.obj.GroupVersionKind())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(r.obj), cur)).To(Succeed())
		r.edit(cur)
		err = r.as.Update(ctx, cur, client.DryRunAll)
	}
	d := decision{rules: map[string]bool{}}
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

// removeWebhooks deletes kueue-guard's webhook configurations and waits until
// the API server no longer calls them.
func removeWebhooks(names ...string) {
	for _, n := range names {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
	}
	Eventually(func() string { return decide(probe()).answer }, 30*time.Second).Should(BeEmpty(), "the webhooks are gone")
}

// installTwins creates the chart's generated policies for the twinned rules
// (default values) and waits until the API server enforces them.
func installTwins() {
	for _, r := range twinned() {
		objs, err := testenv.ChartAdmissionPolicies(values, r.ID)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range objs {
			Expect(admin.Create(ctx, o)).To(Succeed())
		}
	}
	Eventually(func() map[string]bool { return decide(probe()).rules }, time.Minute).
		Should(HaveKey(admission.RuleUntrustedOwner), "the generated policies are in force")
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
		var table strings.Builder
		fmt.Fprintf(&table, "%-36s %8s %8s %8s\n", "rule", "requests", "denied", "admitted")
		for _, rule := range twinned() {
			denied, admitted := 0, 0
			for i, r := range corpus {
				w, a := webhook[i], apiServer[i]
				also := slices.ContainsFunc(rule.CEL.AlsoUnder, func(id string) bool { return w.rules[id] })
				// The twin denies what the webhook denies under the rule, and only
				// what it denies under it or under a rule that judges the same
				// request while the cluster state says so.
				Expect(a.rules[rule.ID]).To(Equal(w.rules[rule.ID] || (also && a.rules[rule.ID])),
					"%s: %s\n  webhook: %s\n  API server: %s", rule.ID, r.name, w.answer, a.answer)
				if a.rules[rule.ID] {
					denied++
				} else {
					admitted++
				}
			}
			Expect(denied).To(BeNumerically(">", 0), "%s: the corpus has requests the rule denies", rule.ID)
			fmt.Fprintf(&table, "%-36s %8d %8d %8d\n", rule.ID, len(corpus), denied, admitted)
		}
		AddReportEntry("decisions", table.String())
	})

	It("names every other built-in rule: the webhook alone enforces it", func() {
		var webhookOnly []string
		for _, r := range admission.Rules() {
			if r.CEL == nil {
				webhookOnly = append(webhookOnly, r.ID)
			}
		}
		AddReportEntry("rules without a twin (they read the informer cache, Kueue's Configuration or the policies)",
			strings.Join(webhookOnly, "\n"))
		Expect(webhookOnly).NotTo(ContainElement(admission.RuleUntrustedOwner))
	})
})
