package chart_test

import (
	"os"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// policyTestPod is the chart's helm test Pod.
func (r rendered) policyTestPod() *corev1.Pod {
	return typed[*corev1.Pod](r.get("Pod", "kueue-guard-policy-test"))
}

var _ = Describe("the policy helm test", func() {
	It("runs policy test on the policy set exactly as the pods mount it, as a helm test hook", func() {
		r := render(defaultValues)
		pod := r.policyTestPod()
		Expect(pod.Annotations).To(HaveKeyWithValue("helm.sh/hook", "test"))
		Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		c := pod.Spec.Containers[0]
		Expect(c.Args).To(Equal([]string{"policy", "test", "/etc/kueue-guard/policies"}))
		Expect(c.Image).To(Equal(r.deployment().Spec.Template.Spec.Containers[0].Image))
		Expect(c.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "policies", MountPath: "/etc/kueue-guard/policies", ReadOnly: true}))
		Expect(configMapVolume(pod.Spec.Volumes, "policies")).To(Equal(configMapVolume(r.deployment().Spec.Template.Spec.Volumes, "policies")))
		Expect(*pod.Spec.AutomountServiceAccountToken).To(BeFalse(), "the test reads files only")
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	})

	It("is selected by nothing that selects the webhook pods (it would become an endpoint of the webhook Service)", func() {
		r := render(observability)
		labels := r.policyTestPod().Labels
		svc := typed[*corev1.Service](r.get("Service", serviceName))
		Expect(selects(svc.Spec.Selector, labels)).To(BeFalse())
		Expect(selects(r.deployment().Spec.Selector.MatchLabels, labels)).To(BeFalse())
		np := typed[*networkingv1.NetworkPolicy](r.get("NetworkPolicy", "kueue-guard"))
		Expect(selects(np.Spec.PodSelector.MatchLabels, labels)).To(BeFalse())
		pdb := typed[*policyv1.PodDisruptionBudget](r.get("PodDisruptionBudget", "kueue-guard"))
		Expect(selects(pdb.Spec.Selector.MatchLabels, labels)).To(BeFalse())
	})

	It("ships the shipped policies' tests, and leaves an excluded policy's tests out with it", func() {
		tree := policyTree(typed[*corev1.ConfigMap](render(defaultValues).get("ConfigMap", "kueue-guard-policies")),
			render(defaultValues).deployment().Spec.Template.Spec.Volumes)
		Expect(tree).To(HaveKey("max-gpus-per-workload_test.rego"))
		r := render("policies:\n  exclude: [max-gpus-per-workload.rego]\n")
		tree = policyTree(typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-policies")), r.deployment().Spec.Template.Spec.Volumes)
		Expect(tree).NotTo(HaveKey("max-gpus-per-workload.rego"))
		Expect(tree).NotTo(HaveKey("max-gpus-per-workload_test.rego"), "its tests would fail without it")
		Expect(tree).To(HaveKey("allowed-queues_test.rego"))
	})

	It("passes the built-ins the configuration opts into", func() {
		r := render("config:\n  policies:\n    allowBuiltins: [time.now_ns]\n")
		Expect(r.policyTestPod().Spec.Containers[0].Args).To(ContainElement("--allow-builtin=time.now_ns"))
	})

	It("is not rendered without any test to run, or when turned off", func() {
		Expect(render("policies:\n  shipped: false\n  files:\n    only.rego: \"package only\\n\"\n").has("Pod", "kueue-guard-policy-test")).To(BeFalse())
		Expect(render("policies: {helmTest: false}").has("Pod", "kueue-guard-policy-test")).To(BeFalse())
		Expect(render("policies:\n  shipped: false\n  files:\n    a_test.rego: \"package a_test\\n\"\n").has("Pod", "kueue-guard-policy-test")).To(BeTrue())
	})
})

var _ = Describe("the policies checksum", func() {
	checksum := func(doc string) string {
		return render(doc).deployment().Spec.Template.Annotations["checksum/policies"]
	}

	It("changes with any policy file, so that the pods roll on a policy change", func() {
		base := checksum(defaultValues)
		Expect(base).To(MatchRegexp("^[0-9a-f]{64}$"))
		Expect(checksum(defaultValues)).To(Equal(base), "stable for the same files")
		Expect(checksum("policies:\n  files:\n    team/limits.rego: \"package team.limits\\n\"\n")).NotTo(Equal(base))
		Expect(checksum("policies:\n  exclude: [lib.rego]\n")).NotTo(Equal(base))
	})

	It("is left out with rollOnChange=false (reload in place only)", func() {
		Expect(render("policies: {rollOnChange: false}").deployment().Spec.Template.Annotations).NotTo(HaveKey("checksum/policies"))
	})
})

var _ = Describe("the PrometheusRule", func() {
	It("alerts on refused policy sets, failing evaluations and Kueue's API not served, over the server's own metrics", func() {
		r := render(observability)
		pr := r.get("PrometheusRule", "kueue-guard")
		Expect(pr.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
		Expect(pr.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
		groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
		Expect(groups).To(HaveLen(1))
		rules := groups[0].(map[string]any)["rules"].([]any)
		readme, err := os.ReadFile("../../README.md")
		Expect(err).NotTo(HaveOccurred())
		metric := regexp.MustCompile(`kueue_guard_[a-z_]+`)
		alerts := map[string]string{}
		for _, raw := range rules {
			rule := raw.(map[string]any)
			expr := rule["expr"].(string)
			alerts[rule["alert"].(string)] = expr
			Expect(expr).To(ContainSubstring(`namespace="`+ns+`", service="`+serviceName+`"`), "scoped to this release's Service")
			for _, name := range metric.FindAllString(expr, -1) {
				Expect(string(readme)).To(MatchRegexp("`"+name+"[`{]"), "a metric the server exports and the README documents")
			}
			Expect(rule["labels"]).To(HaveKeyWithValue("severity", "warning"))
			ann := rule["annotations"].(map[string]any)
			Expect(ann["summary"]).NotTo(BeEmpty())
			Expect(strings.Count(ann["description"].(string), "{{")).To(Equal(strings.Count(ann["description"].(string), "}}")))
		}
		Expect(alerts).To(HaveKeyWithValue("KueueGuardPolicySetRefused", ContainSubstring("kueue_guard_policy_set_load_errors_total")))
		Expect(alerts).To(HaveKeyWithValue("KueueGuardPolicyEvaluationErrors", ContainSubstring("kueue_guard_policy_evaluation_errors_total")))
		Expect(alerts).To(HaveKeyWithValue("KueueGuardKueueAPINotServed", ContainSubstring("kueue_guard_kueue_api_served")))
	})

	It("is off by default (it needs prometheus-operator's CRDs)", func() {
		Expect(render(defaultValues).all("PrometheusRule")).To(BeEmpty())
	})
})

var _ = Describe("server.clientCAConfigMap", func() {
	It("mounts the ConfigMap's ca.crt and requires client certificates signed by it", func() {
		r := render("server: {clientCAConfigMap: apiserver-webhook-client-ca}")
		c := r.deployment().Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElement("--client-ca-file=/etc/kueue-guard/client-ca/ca.crt"))
		Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "client-ca", MountPath: "/etc/kueue-guard/client-ca", ReadOnly: true}))
		v := configMapVolume(r.deployment().Spec.Template.Spec.Volumes, "client-ca")
		Expect(v.Name).To(Equal("apiserver-webhook-client-ca"))
		Expect(v.Items).To(Equal([]corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}))
	})

	It("is off by default", func() {
		c := render(defaultValues).deployment().Spec.Template.Spec.Containers[0]
		Expect(strings.Join(c.Args, " ")).NotTo(ContainSubstring("--client-ca-file"))
	})
})

var _ = Describe("the audit's RBAC", func() {
	It("lists every catalog kind and nothing else, writes only Reports, and holds only its own Lease", func() {
		r := render(defaultValues)
		cr := typed[*rbacv1.ClusterRole](r.get("ClusterRole", "kueue-guard-audit"))
		want := map[string]bool{}
		for _, in := range integrations.All() {
			want[in.GVK.Group+"/"+in.Resource] = true
		}
		got := map[string]bool{}
		for _, rule := range cr.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					if g == "openreports.io" {
						Expect(res).To(Equal("reports"))
						Expect(rule.Verbs).To(ConsistOf("get", "list", "create", "update", "delete"))
						continue
					}
					Expect(rule.Verbs).To(Equal([]string{"list"}), "%s/%s: list only, no watch or get", g, res)
					got[g+"/"+res] = true
				}
			}
		}
		Expect(got).To(Equal(want))
		role := typed[*rbacv1.Role](r.get("Role", "kueue-guard-audit-lease"))
		Expect(role.Namespace).To(Equal(ns))
		Expect(role.Rules).To(ConsistOf(
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"kueue-guard-audit"}, Verbs: []string{"get", "update"}},
		))
	})

	It("is left out with the audit off, and drops the Reports with reports off", func() {
		off := render("audit: {interval: 0s}")
		Expect(off.has("ClusterRole", "kueue-guard-audit")).To(BeFalse())
		Expect(off.has("Role", "kueue-guard-audit-lease")).To(BeFalse())
		noReports := typed[*rbacv1.ClusterRole](render("audit: {reports: {enabled: false}}").get("ClusterRole", "kueue-guard-audit"))
		for _, rule := range noReports.Rules {
			Expect(rule.APIGroups).NotTo(ContainElement("openreports.io"))
		}
	})
})
