package chart_test

import (
	"errors"
	"slices"
	"strings"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the top-level match condition", func() {
	for name, doc := range valueSets {
		It("is the server's own trust rule over the list the server runs with, with "+name+" values", func() {
			r := render(doc)
			cm := typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-config"))
			cfg, err := config.Decode([]byte(cm.Data["config.yaml"]))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Trust.Controllers).To(ContainElement(config.KueueServiceAccount(cfg.KueueNamespace)),
				"Kueue's own service account is always trusted")
			want := webhookconfig.TopLevelCondition(trust.New(cfg.Trust.Controllers).CEL())
			m := typed[*admissionregistrationv1.MutatingWebhookConfiguration](r.get("MutatingWebhookConfiguration", webhookconfig.MutatingName))
			v := typed[*admissionregistrationv1.ValidatingWebhookConfiguration](r.get("ValidatingWebhookConfiguration", webhookconfig.ValidatingName))
			Expect(m.Webhooks[0].MatchConditions).To(ContainElement(want))
			Expect(v.Webhooks[0].MatchConditions).To(ContainElement(want))
		})
	}
})

var _ = Describe("helm lint", func() {
	for name, doc := range valueSets {
		It("passes without warnings with "+name+" values", func() {
			l := lint.AllWithKubeVersion(kg.Dir, values(doc), ns, &chart.KubeVersion)
			var problems []string
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					problems = append(problems, m.Error())
				}
			}
			Expect(problems).To(BeEmpty())
		})
	}
})

var _ = Describe("every rendered object", func() {
	for name, doc := range valueSets {
		It("decodes strictly into its Go type with "+name+" values", func() {
			r := render(doc)
			Expect(r.objs).NotTo(BeEmpty())
			for _, u := range r.objs {
				if u.GetKind() == "ServiceMonitor" || u.GetKind() == "PrometheusRule" {
					continue // no Go type in the module graph; checked below
				}
				_, err := chart.DecodeStrict(u)
				Expect(err).NotTo(HaveOccurred())
				if clusterScoped[u.GetKind()] {
					Expect(u.GetNamespace()).To(BeEmpty(), "%s %s", u.GetKind(), u.GetName())
				} else {
					Expect(u.GetNamespace()).NotTo(BeEmpty(), "%s %s", u.GetKind(), u.GetName())
				}
			}
		})
	}

	It("fails strict decoding on a field its type does not have", func() {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"name": "x"},
			"spec":     map[string]any{"secretName": "x", "dnsName": []any{"typo"}},
		}}
		_, err := chart.DecodeStrict(u)
		Expect(err).To(MatchError(ContainSubstring(`unknown field "spec.dnsName"`)))
	})

	It("reports a kind without a Go type as such", func() {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": map[string]any{"name": "x"}}}
		_, err := chart.DecodeStrict(u)
		Expect(errors.Is(err, chart.ErrNoGoType)).To(BeTrue())
	})
})

var _ = Describe("default values", func() {
	var r rendered
	BeforeEach(func() { r = render(defaultValues) })

	It("render exactly the expected objects", func() {
		var got []string
		for _, u := range r.objs {
			got = append(got, u.GetKind()+"/"+u.GetName())
		}
		Expect(got).To(ConsistOf(
			"Certificate/kueue-guard-ca", "Certificate/"+servingCert,
			"Issuer/kueue-guard-selfsigned", "Issuer/kueue-guard-ca",
			"ConfigMap/kueue-guard-config", "ConfigMap/kueue-guard-policies",
			"Deployment/kueue-guard", "Service/"+serviceName, "ServiceAccount/kueue-guard",
			"PodDisruptionBudget/kueue-guard", "NetworkPolicy/kueue-guard",
			"ClusterRole/kueue-guard", "ClusterRoleBinding/kueue-guard", "ClusterRole/kueue-guard-metrics-reader",
			"Role/kueue-guard-kueue-config", "RoleBinding/kueue-guard-kueue-config",
			"MutatingWebhookConfiguration/"+webhookconfig.MutatingName,
			"ValidatingWebhookConfiguration/"+webhookconfig.ValidatingName,
			"ValidatingAdmissionPolicy/kueue-guard-kueue-webhooks", "ValidatingAdmissionPolicyBinding/kueue-guard-kueue-webhooks",
			"ValidatingAdmissionPolicy/kueue-guard-pod-deletion-grace",
			"ValidatingAdmissionPolicyBinding/kueue-guard-pod-deletion-grace",
			"ValidatingAdmissionPolicy/kueue-guard-owner-guard", "ValidatingAdmissionPolicyBinding/kueue-guard-owner-guard",
			"ValidatingAdmissionPolicy/kueue-guard-release-guard", "ValidatingAdmissionPolicyBinding/kueue-guard-release-guard",
			"ValidatingAdmissionPolicy/kueue-guard-queue-retention", "ValidatingAdmissionPolicyBinding/kueue-guard-queue-retention",
			"ValidatingAdmissionPolicy/kueue-guard-resume-guard", "ValidatingAdmissionPolicyBinding/kueue-guard-resume-guard",
			"ValidatingAdmissionPolicy/kueue-guard-queue-immutability", "ValidatingAdmissionPolicyBinding/kueue-guard-queue-immutability",
			"ValidatingAdmissionPolicy/kueue-guard-defaulting-backstop", "ValidatingAdmissionPolicyBinding/kueue-guard-defaulting-backstop",
			"ValidatingAdmissionPolicy/kueue-guard-marker-guard", "ValidatingAdmissionPolicyBinding/kueue-guard-marker-guard",
			"ValidatingAdmissionPolicy/kueue-guard-label-consistency", "ValidatingAdmissionPolicyBinding/kueue-guard-label-consistency",
			"ValidatingAdmissionPolicy/kueue-guard-integration-guard", "ValidatingAdmissionPolicyBinding/kueue-guard-integration-guard",
			"MutatingAdmissionPolicy/kueue-guard-default-queue", "MutatingAdmissionPolicyBinding/kueue-guard-default-queue",
			"Pod/kueue-guard-policy-test",
			"ClusterRole/kueue-guard-audit", "ClusterRoleBinding/kueue-guard-audit",
			"Role/kueue-guard-audit-lease", "RoleBinding/kueue-guard-audit-lease",
		))
	})

	It("name the mutating configuration so that it sorts before Kueue's", func() {
		m, v, err := kg.WebhookConfigurations(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Name).To(Equal(webhookconfig.MutatingName))
		Expect(v.Name).To(Equal(webhookconfig.ValidatingName))
		names := []string{kueueMutating, m.Name}
		slices.Sort(names) // the API server's order
		Expect(names[0]).To(Equal(m.Name))
	})

	It("render the webhooks exactly as pkg/webhookconfig builds them for the release", func() {
		m, v, err := kg.WebhookConfigurations(nil)
		Expect(err).NotTo(HaveOccurred())
		o := webhookconfig.Options{ServiceNamespace: ns, ServiceName: serviceName,
			ExcludeNamespaces: []string{"kube-system", ns, "kueue-system", "cert-manager"},
			TrustedRequester:  trust.New(config.DefaultTrustedControllers(config.DefaultKueueNamespace)).CEL()}
		Expect(cmp.Diff(webhookconfig.Mutating(o).Webhooks, m.Webhooks)).To(BeEmpty())
		Expect(cmp.Diff(webhookconfig.Validating(o).Webhooks, v.Webhooks)).To(BeEmpty())
	})

	It("register the workload webhooks for exactly the catalog's kinds, and the controller guard for ControllerRules", func() {
		m, v, err := kg.WebhookConfigurations(nil)
		Expect(err).NotTo(HaveOccurred())
		var catalog []string
		for _, in := range integrations.All() {
			catalog = append(catalog, in.GVK.Group+"/"+in.GVK.Version+"/"+in.Resource)
		}
		covered := func(rules []admissionregistrationv1.RuleWithOperations) []string {
			var out []string
			for _, r := range rules {
				for _, g := range r.APIGroups {
					for _, ver := range r.APIVersions {
						for _, res := range r.Resources {
							out = append(out, g+"/"+ver+"/"+res)
						}
					}
				}
				Expect(*r.Scope).To(Equal(admissionregistrationv1.NamespacedScope))
			}
			return out
		}
		Expect(covered(m.Webhooks[0].Rules)).To(ConsistOf(catalog))
		Expect(covered(v.Webhooks[0].Rules)).To(ConsistOf(append(catalog, "apps/v1/deployments/scale", "apps/v1/statefulsets/scale",
			"leaderworkerset.x-k8s.io/v1/leaderworkersets/scale", "kubeflow.org/v1/pytorchjobs/scale", "kubeflow.org/v1/paddlejobs/scale",
			"kubeflow.org/v1/jaxjobs/scale", "apps/v1/replicasets")),
			"the validating webhook also judges the scale of queued Deployments, StatefulSets, LeaderWorkerSets and the "+
				"Kubeflow jobs whose CRDs have one, "+
				"and the owner of ReplicaSets, which Kueue walks through")
		for _, r := range m.Webhooks[0].Rules {
			Expect(r.Operations).To(ConsistOf(admissionregistrationv1.Create))
		}
		for _, r := range v.Webhooks[0].Rules {
			if strings.HasSuffix(r.Resources[0], "/scale") {
				Expect(r.Operations).To(ConsistOf(admissionregistrationv1.Update))
				continue
			}
			Expect(r.Operations).To(ConsistOf(admissionregistrationv1.Create, admissionregistrationv1.Update))
		}
		Expect(v.Webhooks[1].Rules).To(Equal(webhookconfig.ControllerRules()))
	})

	It("fail open on workloads under availability failOpen, which needs the API server's twins", func() {
		_, v, err := kg.WebhookConfigurations(values("{availability: failOpen, webhooks: {validateWorkloads: {failurePolicy: Fail}}}"))
		Expect(err).NotTo(HaveOccurred())
		Expect(*v.Webhooks[0].FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
		_, err = kg.Render(values("{availability: failOpen, apiServerRules: {enabled: false}}"))
		Expect(err).To(MatchError(ContainSubstring("availability: failOpen needs apiServerRules.enabled")))
	})

	DescribeTable("fill the queue twins' parameters from config.defaulting",
		func(doc, policy, param, want string) {
			vap := render(doc).get("ValidatingAdmissionPolicy", "kueue-guard-"+policy)
			vars, _, _ := unstructured.NestedSlice(vap.Object, "spec", "variables")
			got := map[string]string{}
			for _, v := range vars {
				m := v.(map[string]any)
				got[m["name"].(string)] = m["expression"].(string)
			}
			Expect(got).To(HaveKeyWithValue(param, want))
		},
		Entry("the annotation owes a queue by default", "", "queue-retention", "annotationDefaults", "true"),
		Entry("not when a missing LocalQueue is ignored (only the cache knows)", "config: {defaulting: {missingLocalQueue: ignore}}",
			"queue-retention", "annotationDefaults", "false"),
		Entry("the backstop denies by default", "", "defaulting-backstop", "backstopDenies", "true"),
		Entry("not when it only warns", "config: {defaulting: {backstop: warn}}", "defaulting-backstop", "backstopDenies", "false"),
	)

	It("bind the integration twin as config.integrations.action enforces it, and every other twin to Deny", func() {
		actions := func(doc, name string) []string {
			b := render(doc).get("ValidatingAdmissionPolicyBinding", "kueue-guard-"+name)
			got, _, _ := unstructured.NestedStringSlice(b.Object, "spec", "validationActions")
			return got
		}
		Expect(actions("", "integration-guard")).To(Equal([]string{"Deny"}))
		Expect(actions("config: {integrations: {action: warn}}", "integration-guard")).To(Equal([]string{"Warn"}))
		Expect(actions("config: {integrations: {action: warn}}", "owner-guard")).To(Equal([]string{"Deny"}))
	})

	It("set the production webhook defaults", func() {
		m, v, err := kg.WebhookConfigurations(nil)
		Expect(err).NotTo(HaveOccurred())
		mw := m.Webhooks[0]
		Expect(*mw.FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
		Expect(*mw.ReinvocationPolicy).To(Equal(admissionregistrationv1.IfNeededReinvocationPolicy))
		Expect(*v.Webhooks[0].FailurePolicy).To(Equal(admissionregistrationv1.Fail))
		Expect(*v.Webhooks[1].FailurePolicy).To(Equal(admissionregistrationv1.Ignore),
			"the controller guard sees every namespace and guards against an admin's mistake: it fails open")
		check := func(name string, cc admissionregistrationv1.WebhookClientConfig, timeout *int32,
			side *admissionregistrationv1.SideEffectClass, match *admissionregistrationv1.MatchPolicyType,
			versions []string, path string) {
			By(name)
			Expect(*timeout).To(BeEquivalentTo(5))
			Expect(*side).To(Equal(admissionregistrationv1.SideEffectClassNone))
			Expect(*match).To(Equal(admissionregistrationv1.Equivalent))
			Expect(versions).To(Equal([]string{"v1"}))
			Expect(cc.Service.Name).To(Equal(serviceName))
			Expect(cc.Service.Namespace).To(Equal(ns))
			Expect(*cc.Service.Path).To(Equal(path))
			Expect(*cc.Service.Port).To(BeEquivalentTo(443))
			Expect(cc.CABundle).To(BeEmpty(), "cert-manager's cainjector fills it")
		}
		check(mw.Name, mw.ClientConfig, mw.TimeoutSeconds, mw.SideEffects, mw.MatchPolicy, mw.AdmissionReviewVersions, "/mutate-workloads")
		for _, w := range v.Webhooks {
			check(w.Name, w.ClientConfig, w.TimeoutSeconds, w.SideEffects, w.MatchPolicy, w.AdmissionReviewVersions, "/"+strings.TrimSuffix(w.Name, ".kueue-guard.io"))
		}
		Expect(excludedNamespaces(mw.NamespaceSelector)).To(Equal([]string{"kube-system", ns, "kueue-system", "cert-manager"}))
		Expect(excludedNamespaces(v.Webhooks[0].NamespaceSelector)).To(Equal([]string{"kube-system", ns, "kueue-system", "cert-manager"}))
		Expect(excludedNamespaces(v.Webhooks[1].NamespaceSelector)).To(Equal([]string{ns}),
			"the controller guard sees every namespace but its own, kube-system included")
		Expect(mw.ObjectSelector).To(BeNil())
		topLevel := webhookconfig.TopLevelCondition(trust.New(config.DefaultTrustedControllers(config.DefaultKueueNamespace)).CEL())
		Expect(mw.MatchConditions).To(Equal([]admissionregistrationv1.MatchCondition{topLevel}),
			"only what the server would judge is sent: the same trust rule as the pipeline's (package trust)")
		Expect(v.Webhooks[0].MatchConditions).To(Equal([]admissionregistrationv1.MatchCondition{topLevel}))
		Expect(v.Webhooks[1].MatchConditions).To(Equal([]admissionregistrationv1.MatchCondition{webhookconfig.MayRunKueueCondition()}),
			"only objects that may run Kueue are sent to the controller guard")
	})

	It("wire cert-manager: self-signed Issuer → CA Certificate → CA Issuer → serving Certificate, injected into both configurations", func() {
		selfSigned := typed[*certmanagerv1.Issuer](r.get("Issuer", "kueue-guard-selfsigned"))
		Expect(selfSigned.Spec.SelfSigned).NotTo(BeNil())
		ca := typed[*certmanagerv1.Certificate](r.get("Certificate", "kueue-guard-ca"))
		Expect(ca.Spec.IsCA).To(BeTrue())
		Expect(ca.Spec.IssuerRef.Name).To(Equal(selfSigned.Name))
		Expect(ca.Spec.IssuerRef.Kind).To(Equal("Issuer"))
		caIssuer := typed[*certmanagerv1.Issuer](r.get("Issuer", "kueue-guard-ca"))
		Expect(caIssuer.Spec.CA).NotTo(BeNil())
		Expect(caIssuer.Spec.CA.SecretName).To(Equal(ca.Spec.SecretName))

		serving := typed[*certmanagerv1.Certificate](r.get("Certificate", servingCert))
		Expect(serving.Spec.IsCA).To(BeFalse())
		Expect(serving.Spec.IssuerRef.Name).To(Equal(caIssuer.Name))
		Expect(serving.Spec.SecretName).To(Equal(tlsSecret))
		Expect(serving.Spec.DNSNames).To(ConsistOf(serviceName, serviceName+"."+ns, serviceName+"."+ns+".svc",
			serviceName+"."+ns+".svc.cluster.local"))
		Expect(serving.Spec.Usages).To(ContainElement(certmanagerv1.UsageServerAuth))
		Expect(serving.Spec.RenewBefore.Duration).To(BeNumerically("<", serving.Spec.Duration.Duration))

		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			for _, u := range r.all(kind) {
				Expect(u.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", ns+"/"+servingCert))
			}
		}
		Expect(secretVolume(r.deployment().Spec.Template.Spec.Volumes, "certs").SecretName).To(Equal(tlsSecret))
		Expect(r.all("Secret")).To(BeEmpty(), "cert-manager owns the Secret")
	})

	It("run the server with the documented flags, probes and mounts", func() {
		d := r.deployment()
		Expect(d.Spec.Template.Spec.Containers).To(HaveLen(1))
		c := d.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("ghcr.io/kueue-guard/kueue-guard:" + kg.Chart.Metadata.AppVersion))
		Expect(c.Args).To(HaveExactElements("serve",
			"--config=/etc/kueue-guard/config.yaml",
			"--cert-dir=/etc/kueue-guard/certs",
			"--webhook-port=9443",
			"--metrics-bind-address=:8080",
			"--metrics-secure=true",
			"--health-probe-bind-address=:8081",
			"--tls-min-version=1.3",
			"--namespace=$(POD_NAMESPACE)",
			"--max-in-flight=256",
			"--max-in-flight-mib=8",
			"--gc-headroom-mib=64",
			"--policy-timeout=2s",
			"--policy-concurrency=0",
			"--shutdown-delay=5s",
			"--shutdown-timeout=30s",
			"--mutating-webhook-configuration=kueue-guard-mutating",
			"--zap-log-level=info"))
		Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "POD_NAMESPACE",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}))
		Expect(port(c, "webhook")).To(BeEquivalentTo(9443))
		Expect(port(c, "metrics")).To(BeEquivalentTo(8080))
		Expect(port(c, "health")).To(BeEquivalentTo(8081))

		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.LivenessProbe.HTTPGet.Port).To(Equal(intstr.FromString("health")))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		Expect(c.ReadinessProbe.HTTPGet.Port).To(Equal(intstr.FromString("health")))

		// A rollout refuses no request: the old pod sleeps, then serves out its
		// shutdown delay with readiness failing, within its grace period, and
		// no replica goes before its successor is ready.
		Expect(c.Lifecycle.PreStop.Sleep.Seconds).To(BeEquivalentTo(5))
		Expect(*d.Spec.Template.Spec.TerminationGracePeriodSeconds).To(BeNumerically(">", 5+5+30))
		Expect(d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(BeZero())

		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.Name] = m.MountPath
			if m.Name != "tmp" {
				Expect(m.ReadOnly).To(BeTrue(), m.Name)
			}
		}
		Expect(mounts).To(Equal(map[string]string{"config": "/etc/kueue-guard/config.yaml",
			"policies": config.DefaultPolicyDirectory, "certs": "/etc/kueue-guard/certs", "tmp": "/tmp"}))
		Expect(c.Resources.Requests.Cpu().IsZero()).To(BeFalse())
		Expect(c.Resources.Requests.Memory().IsZero()).To(BeFalse())
		Expect(c.Resources.Limits.Cpu().IsZero()).To(BeTrue(), "no CPU limit: a throttled webhook slows every write")
		Expect(c.Resources.Limits.Memory().IsZero()).To(BeFalse())
	})

	It("run non-root with a read-only root filesystem, no capabilities and seccomp RuntimeDefault", func() {
		pod := r.deployment().Spec.Template.Spec
		Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(*pod.SecurityContext.RunAsUser).NotTo(BeZero())
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		sc := pod.Containers[0].SecurityContext
		Expect(*sc.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(*sc.AllowPrivilegeEscalation).To(BeFalse())
		Expect(*sc.RunAsNonRoot).To(BeTrue())
		Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(sc.Capabilities.Add).To(BeEmpty())
		Expect(sc.Privileged).To(BeNil())
		Expect(pod.PriorityClassName).To(Equal("system-cluster-critical"))
	})

	It("keep two replicas apart and available", func() {
		d := r.deployment()
		Expect(*d.Spec.Replicas).To(BeEquivalentTo(2))
		Expect(d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(BeZero())
		podLabels := d.Spec.Template.Labels
		// One node's or one zone's loss leaves a replica serving.
		anti := d.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		Expect(anti).To(HaveLen(1))
		Expect(anti[0].TopologyKey).To(Equal("kubernetes.io/hostname"))
		Expect(selects(anti[0].LabelSelector.MatchLabels, podLabels)).To(BeTrue())
		spread := d.Spec.Template.Spec.TopologySpreadConstraints
		Expect(spread).To(HaveLen(1))
		Expect(spread[0].TopologyKey).To(Equal("topology.kubernetes.io/zone"))
		Expect(spread[0].MaxSkew).To(BeEquivalentTo(1))
		Expect(spread[0].WhenUnsatisfiable).To(Equal(corev1.ScheduleAnyway))
		Expect(selects(spread[0].LabelSelector.MatchLabels, podLabels)).To(BeTrue())

		pdb := typed[*policyv1.PodDisruptionBudget](r.get("PodDisruptionBudget", "kueue-guard"))
		Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
		Expect(selects(pdb.Spec.Selector.MatchLabels, podLabels)).To(BeTrue())
		Expect(selects(d.Spec.Selector.MatchLabels, podLabels)).To(BeTrue())

		svc := typed[*corev1.Service](r.get("Service", serviceName))
		Expect(selects(svc.Spec.Selector, podLabels)).To(BeTrue())
		Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(443))
		Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("webhook")))
	})

	It("render a configuration file that kueue-guard loads, with the policy directory at the mount", func() {
		cm := typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-config"))
		cfg, err := config.Decode([]byte(cm.Data["config.yaml"]))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Policies.Directory).To(Equal(config.DefaultPolicyDirectory))
		Expect(cfg.ExemptNamespaces).To(Equal([]string{"cert-manager"}), "the chart always exempts cert-manager's namespace")
		want := config.Default()
		want.ExemptNamespaces = cfg.ExemptNamespaces
		Expect(cmp.Diff(want, cfg, cmpopts.EquateEmpty())).To(BeEmpty(),
			"apart from it, the chart's defaults are the program's defaults")
	})

	It("ship the repository's policies, laid out as in policies/", func() {
		cm := typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-policies"))
		gen, err := chart.Generated(mustRoot())
		Expect(err).NotTo(HaveOccurred())
		want := map[string]string{}
		for rel, b := range gen {
			if p, ok := strings.CutPrefix(rel, chart.PoliciesDir+"/"); ok {
				want[p] = string(b)
			}
		}
		Expect(policyTree(cm, r.deployment().Spec.Template.Spec.Volumes)).To(Equal(want))
	})

	It("ship policies that kueue-guard's policy engine loads from the mounted directory", func() {
		cm := typed[*corev1.ConfigMap](r.get("ConfigMap", "kueue-guard-policies"))
		dir := GinkgoT().TempDir()
		for rel, content := range policyTree(cm, r.deployment().Spec.Template.Spec.Volumes) {
			write(dir, rel, content)
		}
		engine, err := policies.NewEngine(policies.Options{Directory: dir})
		Expect(err).NotTo(HaveOccurred())
		Expect(engine.Load()).To(Succeed())
		if len(cm.Data) > 0 {
			Expect(engine.Policies()).NotTo(BeEmpty())
		}
	})

	It("grant only reads, and ConfigMaps only in Kueue's namespace, besides the secure metrics' reviews", func() {
		cr := typed[*rbacv1.ClusterRole](r.get("ClusterRole", "kueue-guard"))
		gen, err := chart.RBAC()
		Expect(err).NotTo(HaveOccurred())
		reviews := []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		}
		Expect(cr.Rules).To(Equal(append(slices.Clone(gen.ClusterRules), reviews...)))
		for _, rule := range cr.Rules[:len(gen.ClusterRules)] {
			Expect(rule.Verbs).To(ConsistOf("get", "list", "watch"))
			Expect(rule.Resources).NotTo(ContainElements("secrets", "configmaps"))
		}
		Expect(resources(cr.Rules)).To(ContainElements("/namespaces", "kueue.x-k8s.io/localqueues",
			"kueue.x-k8s.io/clusterqueues", "apps/deployments"))
		role := typed[*rbacv1.Role](r.get("Role", "kueue-guard-kueue-config"))
		Expect(role.Namespace).To(Equal("kueue-system"))
		Expect(resources(role.Rules)).To(ConsistOf("/configmaps"))
		for _, rule := range role.Rules {
			Expect(rule.Verbs).To(ConsistOf("get", "list", "watch"))
		}
		crb := typed[*rbacv1.ClusterRoleBinding](r.get("ClusterRoleBinding", "kueue-guard"))
		Expect(crb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "kueue-guard", Namespace: ns}))
		Expect(r.deployment().Spec.Template.Spec.ServiceAccountName).To(Equal("kueue-guard"))
	})

	It("render NOTES.txt with the ordering safeguard", func() {
		files, err := kg.RenderFiles(nil)
		Expect(err).NotTo(HaveOccurred())
		notes := files["kueue-guard/templates/NOTES.txt"]
		Expect(notes).To(ContainSubstring("mutatingWebhook.reinvocationPolicy: IfNeeded"))
		Expect(notes).To(ContainSubstring(`"kueue-guard-mutating" must sort before`))
		Expect(notes).To(ContainSubstring("kueue_guard_webhook_order_problems"))
		Expect(notes).NotTo(ContainSubstring("WARNING"))
	})
})
