package chart_test

import (
	"maps"
	"os/exec"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kueue-guard/kueue-guard/pkg/chart"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Value sets the chart is checked with, as users would write them.
const (
	defaultValues  = ``
	certManagerOff = `
certManager: {enabled: false}`
	haOff = `
replicaCount: 1
podAntiAffinity: none`
	customSelectors = `
webhooks:
  excludeNamespaces: [kube-system, legacy-batch]
  mutateWorkloads:
    namespaceSelector:
      matchLabels: {kueue-guard.io/enabled: "true"}
      matchExpressions:
      - {key: tier, operator: NotIn, values: [system]}
  validateWorkloads:
    namespaceSelector:
      matchExpressions:
      - {key: tier, operator: NotIn, values: [system]}
  validateKueueControllers:
    namespaceSelector:
      matchExpressions:
      - {key: controllers.example.com/trusted, operator: DoesNotExist}
config:
  exemptNamespaces: [ci-runners]`
	conditionsAndObjectSelector = `
webhooks:
  mutateWorkloads:
    objectSelector:
      matchExpressions:
      - {key: kueue-guard.io/skip, operator: DoesNotExist}
    matchConditions:
    - {name: not-node-users, expression: '!request.userInfo.username.startsWith("system:node:")'}
  validateWorkloads:
    objectSelector: {matchLabels: {team: ml}}
    matchConditions:
    - {name: not-gc, expression: 'request.userInfo.username != "system:serviceaccount:kube-system:generic-garbage-collector"'}
  validateKueueControllers:
    matchConditions:
    - {name: not-kueue-itself, expression: 'request.userInfo.username != "system:serviceaccount:kueue-system:kueue-controller-manager"'}`
	observability = `
audit:
  reports:
    installCRDs: true
networkPolicy:
  enabled: true
  webhookFrom:
  - ipBlock: {cidr: 10.0.0.0/16}
  metricsFrom:
  - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
prometheusRule:
  enabled: true
  labels: {release: prometheus}
serviceMonitor:
  enabled: true
  labels: {release: prometheus}`
)

// valueSets are all of the above; every test that must hold for any values
// runs over them.
var valueSets = map[string]string{
	"default":                                defaultValues,
	"certManager off":                        certManagerOff,
	"HA off":                                 haOff,
	"custom selectors":                       customSelectors,
	"matchConditions and objectSelector":     conditionsAndObjectSelector,
	"NetworkPolicy and ServiceMonitor on":    observability,
	"everything at once (but cert-manager)":  certManagerOff + customSelectors,
	"policies: extra files, one shipped out": "policies:\n  exclude: [lib.rego]\n  files:\n    team/limits.rego: \"package team.limits\\n\"\n",
	"custom trust":                           customTrust,
}

// customTrust trusts a prefix and a group besides a user, in another Kueue
// namespace.
const customTrust = `
config:
  kueueNamespace: batch-kueue
  trust:
    controllers:
    - system:kube-controller-manager
    - system:serviceaccount:operators:*
    - group:system:controllers`

// clusterScoped are the kinds the chart renders without a namespace.
var clusterScoped = map[string]bool{
	"ClusterRole": true, "ClusterRoleBinding": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"CustomResourceDefinition": true,
}

const (
	ns            = chart.DefaultNamespace
	serviceName   = "kueue-guard-webhook"
	tlsSecret     = "kueue-guard-webhook-tls"
	servingCert   = "kueue-guard-serving-cert"
	kueueMutating = "kueue-mutating-webhook-configuration"
)

func excludedNamespaces(sel *metav1.LabelSelector) []string {
	GinkgoHelper()
	Expect(sel).NotTo(BeNil())
	Expect(sel.MatchExpressions).NotTo(BeEmpty())
	req := sel.MatchExpressions[0]
	Expect(req.Key).To(Equal("kubernetes.io/metadata.name"))
	Expect(req.Operator).To(Equal(metav1.LabelSelectorOpNotIn))
	return req.Values
}

func port(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// selects reports whether a label selector's matchLabels select labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func secretVolume(vols []corev1.Volume, name string) *corev1.SecretVolumeSource {
	GinkgoHelper()
	for _, v := range vols {
		if v.Name == name {
			Expect(v.Secret).NotTo(BeNil())
			return v.Secret
		}
	}
	Fail("no volume " + name)
	return nil
}

func configMapVolume(vols []corev1.Volume, name string) *corev1.ConfigMapVolumeSource {
	GinkgoHelper()
	for _, v := range vols {
		if v.Name == name {
			Expect(v.ConfigMap).NotTo(BeNil())
			return v.ConfigMap
		}
	}
	Fail("no volume " + name)
	return nil
}

// policyTree is the directory the kubelet would project from the policies
// ConfigMap through the volume's items: relative path → content.
func policyTree(cm *corev1.ConfigMap, vols []corev1.Volume) map[string]string {
	GinkgoHelper()
	vol := configMapVolume(vols, "policies")
	Expect(vol.Name).To(Equal(cm.Name))
	tree := map[string]string{}
	if len(vol.Items) == 0 {
		maps.Copy(tree, cm.Data)
		return tree
	}
	Expect(vol.Items).To(HaveLen(len(cm.Data)), "every key is projected")
	for _, it := range vol.Items {
		content, ok := cm.Data[it.Key]
		Expect(ok).To(BeTrue(), "item key %s in the ConfigMap", it.Key)
		tree[it.Path] = content
	}
	return tree
}

// resources lists group/resource of every rule.
func resources(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, g+"/"+res)
			}
		}
	}
	return out
}

func mustRoot() string {
	GinkgoHelper()
	root, err := chart.RepoRoot(".")
	Expect(err).NotTo(HaveOccurred())
	return root
}

func moduleDir(module string) string {
	GinkgoHelper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(out))
}
