package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("NOTES.txt", func() {
	It("warns when webhooks.mutatingName sorts after Kueue's configuration", func() {
		files, err := kg.RenderFiles(values("webhooks: {mutatingName: zz-kueue-guard}"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files["kueue-guard/templates/NOTES.txt"]).To(ContainSubstring("WARNING: webhooks.mutatingName sorts after"))
	})
})

var _ = Describe("image values", func() {
	It("pin a digest over the tag, and take an explicit tag over appVersion", func() {
		c := render(`image: {digest: "sha256:` + strings.Repeat("ab", 32) + `"}`).deployment().Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("ghcr.io/kueue-guard/kueue-guard@sha256:" + strings.Repeat("ab", 32)))
		c = render(`image: {tag: v9.9.9}`).deployment().Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("ghcr.io/kueue-guard/kueue-guard:v9.9.9"))
	})
})

var _ = Describe("certManager.enabled=false", func() {
	var r rendered
	BeforeEach(func() { r = render(certManagerOff) })

	It("renders no cert-manager objects and no inject-ca-from", func() {
		Expect(r.all("Certificate")).To(BeEmpty())
		Expect(r.all("Issuer")).To(BeEmpty())
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			for _, u := range r.all(kind) {
				Expect(u.GetAnnotations()).NotTo(HaveKey("cert-manager.io/inject-ca-from"))
			}
		}
	})

	It("lets the server manage its certificates in an empty Secret it may write, mounted optional", func() {
		secret := typed[*corev1.Secret](r.get("Secret", tlsSecret))
		Expect(secret.Data).To(BeEmpty())
		c := r.deployment().Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--manage-certs", "--cert-secret-name="+tlsSecret,
			"--webhook-service-name="+serviceName,
			"--mutating-webhook-configuration="+webhookconfig.MutatingName,
			"--validating-webhook-configuration="+webhookconfig.ValidatingName))
		vol := secretVolume(r.deployment().Spec.Template.Spec.Volumes, "certs")
		Expect(vol.SecretName).To(Equal(tlsSecret))
		Expect(*vol.Optional).To(BeTrue(), "the pod starts before the server fills the Secret")
	})

	It("grants writes only on its own Secret and webhook configurations", func() {
		role := typed[*rbacv1.Role](r.get("Role", "kueue-guard-certs"))
		Expect(role.Namespace).To(Equal(ns))
		Expect(role.Rules).To(ConsistOf(
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "watch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{tlsSecret},
				Verbs: []string{"get", "update"}},
		))
		cr := typed[*rbacv1.ClusterRole](r.get("ClusterRole", "kueue-guard"))
		for _, rule := range cr.Rules {
			if slices.Equal(rule.Verbs, []string{"create"}) {
				// The secure metrics' TokenReviews and SubjectAccessReviews.
				Expect(rule.APIGroups).To(BeElementOf([]string{"authentication.k8s.io"}, []string{"authorization.k8s.io"}))
				continue
			}
			if slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
				Expect(rule.APIGroups).To(Equal([]string{"admissionregistration.k8s.io"}))
				Expect(rule.ResourceNames).To(HaveLen(1))
				Expect(rule.ResourceNames[0]).To(BeElementOf(webhookconfig.MutatingName, webhookconfig.ValidatingName))
				Expect(rule.Verbs).To(ConsistOf("get", "update", "patch"))
			}
		}
		Expect(resources(cr.Rules)).To(ContainElements("admissionregistration.k8s.io/mutatingwebhookconfigurations",
			"admissionregistration.k8s.io/validatingwebhookconfigurations"))
		rb := typed[*rbacv1.RoleBinding](r.get("RoleBinding", "kueue-guard-certs"))
		Expect(rb.RoleRef.Name).To(Equal(role.Name))
	})
})

var _ = Describe("HA off", func() {
	It("renders one replica without a PodDisruptionBudget (which would block drains) or anti-affinity", func() {
		r := render(haOff)
		Expect(*r.deployment().Spec.Replicas).To(BeEquivalentTo(1))
		Expect(r.all("PodDisruptionBudget")).To(BeEmpty())
		Expect(r.deployment().Spec.Template.Spec.Affinity).To(BeNil())
	})

	It("makes anti-affinity preferred with podAntiAffinity=soft, and drops the zone spread with zoneSpread empty", func() {
		r := render("podAntiAffinity: soft\nzoneSpread: \"\"")
		spec := r.deployment().Spec.Template.Spec
		Expect(spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1))
		Expect(spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(BeEmpty())
		Expect(spec.TopologySpreadConstraints).To(BeEmpty())
	})

	It("uses affinity as given instead of the default", func() {
		r := render(`affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]}}}`)
		aff := r.deployment().Spec.Template.Spec.Affinity
		Expect(aff.PodAntiAffinity).To(BeNil())
		Expect(aff.NodeAffinity).NotTo(BeNil())
	})
})

var _ = Describe("the values schema", func() {
	It("offers exactly the built-ins the policy engine lets an admin opt into", func() {
		raw, err := os.ReadFile(filepath.Join(kg.Dir, "values.schema.json"))
		Expect(err).NotTo(HaveOccurred())
		var schema struct {
			Properties struct {
				Config struct {
					Properties struct {
						Policies struct {
							Properties struct {
								AllowBuiltins struct {
									Items struct {
										Enum []string `json:"enum"`
									} `json:"items"`
								} `json:"allowBuiltins"`
							} `json:"properties"`
						} `json:"policies"`
					} `json:"properties"`
				} `json:"config"`
			} `json:"properties"`
		}
		Expect(json.Unmarshal(raw, &schema)).To(Succeed())
		Expect(schema.Properties.Config.Properties.Policies.Properties.AllowBuiltins.Items.Enum).To(ConsistOf(policies.OptInBuiltins()))
	})

	It("carries the opted-in built-ins into the configuration file", func() {
		cm := typed[*corev1.ConfigMap](render(`config: {policies: {allowBuiltins: [time.now_ns]}}`).get("ConfigMap", "kueue-guard-config"))
		cfg, err := config.Decode([]byte(cm.Data["config.yaml"]))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Policies.AllowBuiltins).To(Equal([]string{"time.now_ns"}))
	})
})

var _ = Describe("custom selectors", func() {
	It("exclude the system namespaces always, then the listed and the exempt ones, from the workload webhooks, and add the extra terms", func() {
		m, v, err := kg.WebhookConfigurations(values(customSelectors))
		Expect(err).NotTo(HaveOccurred())
		mw, vw, cw := m.Webhooks[0], v.Webhooks[0], v.Webhooks[1]
		always := []string{"kube-system", ns, "kueue-system", "cert-manager"}
		Expect(excludedNamespaces(mw.NamespaceSelector)).To(Equal(append(always, "legacy-batch", "ci-runners")))
		Expect(excludedNamespaces(vw.NamespaceSelector)).To(Equal(append(always, "legacy-batch", "ci-runners")))
		Expect(mw.NamespaceSelector.MatchLabels).To(Equal(map[string]string{"kueue-guard.io/enabled": "true"}))
		Expect(mw.NamespaceSelector.MatchExpressions[1].Key).To(Equal("tier"))
		Expect(vw.NamespaceSelector.MatchLabels).To(BeEmpty())
		Expect(vw.NamespaceSelector.MatchExpressions).To(HaveLen(2))

		Expect(excludedNamespaces(cw.NamespaceSelector)).To(Equal([]string{ns}))
		Expect(cw.NamespaceSelector.MatchExpressions[1].Key).To(Equal("controllers.example.com/trusted"))
	})

	It("follow the release namespace", func() {
		other := *kg
		other.Namespace = "platform-guards"
		m, v, err := other.WebhookConfigurations(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(excludedNamespaces(m.Webhooks[0].NamespaceSelector)).To(Equal([]string{"kube-system", "platform-guards", "kueue-system", "cert-manager"}))
		Expect(excludedNamespaces(v.Webhooks[1].NamespaceSelector)).To(Equal([]string{"platform-guards"}))
		Expect(m.Webhooks[0].ClientConfig.Service.Namespace).To(Equal("platform-guards"))
	})

	It("keep the configured exemptions in the configuration file as well", func() {
		cm := typed[*corev1.ConfigMap](render(customSelectors).get("ConfigMap", "kueue-guard-config"))
		cfg, err := config.Decode([]byte(cm.Data["config.yaml"]))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.ExemptNamespaces).To(Equal([]string{"cert-manager", "ci-runners"}))
	})

	// An admin empties every list: the namespaces that repair kueue-guard stay
	// out of its reach.
	It("cannot be made to send kube-system, the release namespace, Kueue's or cert-manager's", func() {
		m, v, err := kg.WebhookConfigurations(values(`
webhooks: {excludeNamespaces: []}
config: {exemptNamespaces: [], kueueNamespace: batch-kueue}
certManager: {namespace: certs}`))
		Expect(err).NotTo(HaveOccurred())
		for _, sel := range []*metav1.LabelSelector{m.Webhooks[0].NamespaceSelector, v.Webhooks[0].NamespaceSelector} {
			Expect(excludedNamespaces(sel)).To(Equal([]string{"kube-system", ns, "batch-kueue", "certs"}))
		}
	})
})

var _ = Describe("matchConditions and objectSelector", func() {
	It("are added per webhook after the generated conditions when given", func() {
		m, v, err := kg.WebhookConfigurations(values(conditionsAndObjectSelector))
		Expect(err).NotTo(HaveOccurred())
		names := func(cs []admissionregistrationv1.MatchCondition) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.Name)
			}
			return out
		}
		Expect(m.Webhooks[0].ObjectSelector.MatchExpressions[0].Key).To(Equal("kueue-guard.io/skip"))
		Expect(names(m.Webhooks[0].MatchConditions)).To(Equal([]string{"top-level-workload", "not-node-users"}))
		Expect(v.Webhooks[0].ObjectSelector.MatchLabels).To(Equal(map[string]string{"team": "ml"}))
		Expect(names(v.Webhooks[0].MatchConditions)).To(Equal([]string{"top-level-workload", "not-gc"}))
		Expect(v.Webhooks[1].ObjectSelector).To(BeNil())
		Expect(names(v.Webhooks[1].MatchConditions)).To(Equal([]string{"may-run-kueue", "not-kueue-itself"}))
	})
})

var _ = Describe("NetworkPolicy and ServiceMonitor", func() {
	var r rendered
	BeforeEach(func() { r = render(observability) })

	It("admit the webhook, metrics and probe ports only, from the given peers", func() {
		np := typed[*networkingv1.NetworkPolicy](r.get("NetworkPolicy", "kueue-guard"))
		Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
		Expect(selects(np.Spec.PodSelector.MatchLabels, r.deployment().Spec.Template.Labels)).To(BeTrue())
		c := r.deployment().Spec.Template.Spec.Containers[0]
		from := map[string][]networkingv1.NetworkPolicyPeer{}
		for _, rule := range np.Spec.Ingress {
			Expect(rule.Ports).To(HaveLen(1))
			name := rule.Ports[0].Port.StrVal
			Expect(port(c, name)).NotTo(BeZero(), "a named container port")
			from[name] = rule.From
		}
		Expect(from).To(HaveLen(3))
		Expect(from["webhook"][0].IPBlock.CIDR).To(Equal("10.0.0.0/16"))
		Expect(from["metrics"][0].NamespaceSelector.MatchLabels).To(HaveKeyWithValue("kubernetes.io/metadata.name", "monitoring"))
		Expect(from["health"]).To(BeEmpty())
	})

	It("are on by default, admitting the three ports from any source", func() {
		np := typed[*networkingv1.NetworkPolicy](render(defaultValues).get("NetworkPolicy", "kueue-guard"))
		Expect(np.Spec.Ingress).To(HaveLen(3))
		for _, rule := range np.Spec.Ingress {
			Expect(rule.From).To(BeEmpty(), "the API server's address differs between clusters")
		}
	})

	It("scrape over HTTPS with a bearer token, verifying the webhook's certificate, and bind the scraper to read /metrics", func() {
		r := render(observability + "\n  scraper: {name: prometheus-k8s, namespace: monitoring}")
		sm := r.get("ServiceMonitor", "kueue-guard")
		ep, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		e := ep[0].(map[string]any)
		Expect(e["scheme"]).To(Equal("https"))
		Expect(e["bearerTokenFile"]).To(Equal("/var/run/secrets/kubernetes.io/serviceaccount/token"))
		Expect(e["tlsConfig"]).To(HaveKeyWithValue("serverName", serviceName+"."+ns+".svc"))
		reader := typed[*rbacv1.ClusterRole](r.get("ClusterRole", "kueue-guard-metrics-reader"))
		Expect(reader.Rules).To(Equal([]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}))
		crb := typed[*rbacv1.ClusterRoleBinding](r.get("ClusterRoleBinding", "kueue-guard-metrics-reader"))
		Expect(crb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"}))
	})

	It("scrape the Service's metrics port", func() {
		sm := r.get("ServiceMonitor", "kueue-guard")
		Expect(sm.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
		Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		svc := typed[*corev1.Service](r.get("Service", serviceName))
		Expect(selects(sel, svc.Labels)).To(BeTrue())
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		Expect(endpoints).To(HaveLen(1))
		ep := endpoints[0].(map[string]any)
		Expect(ep).To(HaveKeyWithValue("port", "metrics"))
		Expect(ep).To(HaveKeyWithValue("path", "/metrics"))
		var names []string
		for _, p := range svc.Spec.Ports {
			names = append(names, p.Name)
		}
		Expect(names).To(ContainElement("metrics"))
		spec, _, _ := unstructured.NestedMap(sm.Object, "spec")
		Expect(spec).To(HaveLen(3), "selector, namespaceSelector, endpoints: %v", spec)
	})
})

var _ = Describe("policies values", func() {
	It("add files, replace none, and leave excluded shipped files out", func() {
		r := render("policies:\n  exclude: [lib.rego]\n  files:\n    team/limits.rego: \"package team.limits\\n\"\n")
		cm := typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-policies"))
		tree := policyTree(cm, r.deployment().Spec.Template.Spec.Volumes)
		Expect(tree).To(HaveKeyWithValue("team/limits.rego", "package team.limits\n"))
		Expect(tree).NotTo(HaveKey("lib.rego"))
		Expect(cm.Data).To(HaveKey("team__limits.rego"))
	})

	It("ship nothing but the given files with shipped=false", func() {
		r := render("policies:\n  shipped: false\n  files:\n    only.rego: \"package only\\n\"\n")
		cm := typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-policies"))
		Expect(policyTree(cm, r.deployment().Spec.Template.Spec.Volumes)).To(Equal(map[string]string{"only.rego": "package only\n"}))
	})

	It("render an empty ConfigMap with no policies at all", func() {
		r := render("policies: {shipped: false}")
		cm := typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-policies"))
		Expect(cm.Data).To(BeEmpty())
		Expect(configMapVolume(r.deployment().Spec.Template.Spec.Volumes, "policies").Items).To(BeEmpty())
	})
})

var _ = Describe("values.schema.json", func() {
	DescribeTable("rejects a bad value",
		func(doc, mention string) {
			_, err := kg.Render(values(doc))
			Expect(err).To(MatchError(ContainSubstring("values don't meet the specifications of the schema")))
			Expect(err).To(MatchError(ContainSubstring(mention)))
		},
		Entry("an unknown failure policy", "webhooks: {mutateWorkloads: {failurePolicy: Sometimes}}", "failurePolicy"),
		Entry("zero replicas", "replicaCount: 0", "replicaCount"),
		Entry("an availability mode the chart does not know", "availability: sometimes", "availability"),
		Entry("an external framework not named Kind.version.group", "apiServerRules: {kueueExternalFrameworks: [foo]}", "kueueExternalFrameworks"),
		Entry("an unknown top-level key (a typo)", "replicas: 3", "replicas"),
		Entry("an unknown install profile", "config: {installProfile: custom}", "installProfile"),
		Entry("the policy directory (fixed to the mount)", "config: {policies: {directory: /tmp}}", "directory"),
		Entry("a webhook timeout above the API server's 30 s", "webhooks: {timeoutSeconds: 31}", "timeoutSeconds"),
		Entry("TLS 1.1", `server: {tlsMinVersion: "1.1"}`, "tlsMinVersion"),
		Entry("a bad anti-affinity mode", "podAntiAffinity: maybe", "podAntiAffinity"),
		Entry("a selector operator Kubernetes does not know", "webhooks: {validateWorkloads: {namespaceSelector: {matchExpressions: [{key: a, operator: Like}]}}}", "operator"),
		Entry("a matchCondition without expression", "webhooks: {validateWorkloads: {matchConditions: [{name: a}]}}", "expression"),
		Entry("a non-string policy file", "policies: {files: {a.rego: {package: a}}}", "a.rego"),
		Entry("a policy path escaping the directory", `policies: {files: {"../x.rego": "package x"}}`, "../x.rego"),
	)

	It("accepts every value set used in these tests", func() {
		for name, doc := range valueSets {
			_, err := kg.Render(values(doc))
			Expect(err).NotTo(HaveOccurred(), name)
		}
	})
})

// excludedNamespaces returns the values of the selector's
// kubernetes.io/metadata.name NotIn requirement, which must come first.
var _ = Describe("the OpenReports CRDs", func() {
	It("are not rendered by default: another tool may own them", func() {
		Expect(render(defaultValues).all("CustomResourceDefinition")).To(BeEmpty())
	})

	It("are rendered with audit.reports.installCRDs as the reports module ships them, labelled and kept on uninstall", func() {
		crds := render("audit:\n  reports:\n    installCRDs: true\n").all("CustomResourceDefinition")
		Expect(crds).To(HaveLen(2))
		dir := moduleDir(chart.ReportsModule)
		for _, u := range crds {
			crd := typed[*apiextensionsv1.CustomResourceDefinition](u)
			Expect(crd.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
			Expect(crd.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", "kueue-guard"))
			raw, err := os.ReadFile(filepath.Join(dir, "config", "crd", crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"))
			Expect(err).NotTo(HaveOccurred())
			var shipped apiextensionsv1.CustomResourceDefinition
			Expect(yaml.Unmarshal(raw, &shipped)).To(Succeed())
			Expect(crd.Spec).To(Equal(shipped.Spec), "the chart's %s is the module's", crd.Name)
			Expect(crd.Name).To(Equal(shipped.Name))
		}
		Expect([]string{crds[0].GetName(), crds[1].GetName()}).To(ConsistOf("reports.openreports.io", "clusterreports.openreports.io"))
	})
})

// moduleDir is a module's directory in the module cache, at go.mod's version.
