package preflight_test

import (
	"bytes"
	"encoding/json"
	"errors"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	pf "github.com/kueue-guard/kueue-guard/pkg/preflight"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// clean is a cluster with nothing in the way of either target: a recent
// Kubernetes, no Kueue manager, kueue-guard installed under the target's
// profile with its webhook first.
func clean(target pf.Target) *pf.State {
	cfg := config.Default()
	cfg.InstallProfile = config.InstallProfile(target)
	cfg.SetDefaults()
	return &pf.State{Host: "https://cluster.example", Version: "v1.36.3",
		Mutating: []admissionregistrationv1.MutatingWebhookConfiguration{
			mutating("kueue-guard-mutating", webhookconfig.MutateWorkloadsPath, nil),
			kueueMutating("kueue-mutating-webhook-configuration", nil),
		},
		Guards: []pf.GuardConfig{{Source: "ConfigMap kueue-guard-system/kueue-guard-config", Release: "kueue-guard",
			Namespace: "kueue-guard-system", Config: cfg}},
	}
}

func mutating(name, path string, reinvoke *admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhookConfiguration {
	return admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "w." + name, ReinvocationPolicy: reinvoke,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "ns", Name: "svc", Path: new(path)}}}}}
}

// kueueMutating is Kueue's configuration: a workload webhook and one of its own API's.
func kueueMutating(name string, reinvoke *admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhookConfiguration {
	c := mutating(name, "/mutate-batch-v1-job", reinvoke)
	c.Webhooks = append(c.Webhooks, mutating(name, "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue", reinvoke).Webhooks...)
	return c
}

func check(r *pf.Report, id string) pf.Check {
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	Fail("no check " + id)
	return pf.Check{}
}

func lookup(group, kind string) *integrations.Integration {
	in, ok := integrations.Lookup(schema.GroupKind{Group: group, Kind: kind})
	Expect(ok).To(BeTrue())
	return in
}

func ossManager(ns, name string) pf.Manager {
	return pf.Manager{Identity: kueuecontroller.Identity{Kind: "Deployment", Namespace: ns, Name: name},
		Reasons: []string{`image "registry.k8s.io/kueue/kueue:v0.19.2"`}, Image: "registry.k8s.io/kueue/kueue:v0.19.2", Version: "v0.19.2",
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "kueue"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "kueue", "meta.helm.sh/release-namespace": ns}}
}

var _ = Describe("Judge", func() {
	It("passes every check on a clean cluster, for either target, exit 0", func() {
		for _, t := range pf.Targets {
			r := pf.Judge(t, clean(t))
			Expect(r.Result).To(Equal(pf.Pass), "%s: %+v", t, r.Checks)
			Expect(r.ExitCode()).To(Equal(pf.ExitPass))
			Expect(r.Checks).To(HaveLen(7))
			for _, c := range r.Checks {
				Expect(c.Doc).To(Equal(pf.DocPage + "#" + c.ID))
			}
		}
	})

	DescribeTable("Kubernetes version against the target's minimum",
		func(target pf.Target, v string, want pf.Status) {
			s := clean(target)
			s.Version = v
			Expect(check(pf.Judge(target, s), pf.CheckKubernetesVersion).Status).To(Equal(want))
		},
		Entry("managed needs 1.34", pf.TargetManaged, "v1.33.7", pf.Fail),
		Entry("managed at 1.34", pf.TargetManaged, "v1.34.0", pf.Pass),
		Entry("a vendor suffix", pf.TargetManaged, "v1.34.2-aks.1", pf.Pass),
		Entry("oss needs 1.29", pf.TargetOSS, "v1.28.15", pf.Fail),
		Entry("oss at 1.29", pf.TargetOSS, "v1.29.0", pf.Pass),
		Entry("not a version", pf.TargetOSS, "banana", pf.Error),
	)

	It("says it could not check the version when the API server did not answer, exit 2", func() {
		s := clean(pf.TargetManaged)
		s.VersionErr = errors.New("connection refused")
		r := pf.Judge(pf.TargetManaged, s)
		c := check(r, pf.CheckKubernetesVersion)
		Expect(c.Status).To(Equal(pf.Error))
		Expect(c.Summary).To(ContainSubstring("connection refused"))
		Expect(r.ExitCode()).To(Equal(pf.ExitError))
	})

	It("fails every Kueue manager the managed install would refuse, with the command that uninstalls it, export first", func() {
		s := clean(pf.TargetManaged)
		helm := ossManager("kueue-system", "kueue-controller-manager")
		helm.Identity.Namespace, helm.Annotations["meta.helm.sh/release-namespace"] = "batch", "batch"
		manifests := pf.Manager{Identity: kueuecontroller.Identity{Kind: "Deployment", Namespace: "kueue-system", Name: "kueue-controller-manager"},
			Image: "registry.k8s.io/kueue/kueue:v0.16.2", Reasons: []string{"labels"},
			Labels: map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue"}}
		pod := pf.Manager{Identity: kueuecontroller.Identity{Kind: "Pod", Namespace: "dev", Name: "kueue-debug"},
			Image: "myregistry.azurecr.io/kueue", Reasons: []string{"image"}, Labels: map[string]string{}}
		s.Managers = []pf.Manager{helm, manifests, pod}
		// kueue-guard runs under oss: no manager is the managed install.
		s.Guards[0].Config.InstallProfile = config.ProfileOSS
		r := pf.Judge(pf.TargetManaged, s)
		c := check(r, pf.CheckKueueControllers)
		Expect(c.Status).To(Equal(pf.Fail))
		Expect(c.Findings).To(HaveLen(3))
		Expect(c.Findings[0].Object).To(Equal("Deployment batch/kueue-controller-manager"))
		Expect(c.Findings[0].Fix).To(HavePrefix("kueue-guard kueue export --output-dir kueue-backup/"))
		Expect(c.Findings[0].Fix).To(HaveSuffix("helm uninstall kueue --namespace batch"))
		Expect(c.Findings[1].Fix).To(HaveSuffix("kubectl delete -f https://github.com/kubernetes-sigs/kueue/releases/download/v0.16.2/manifests.yaml"))
		Expect(c.Findings[2].Fix).To(ContainSubstring("kubectl delete pod kueue-debug --namespace dev"))
		Expect(r.ExitCode()).To(Equal(pf.ExitFail))
	})

	It("passes the managed install kueue-guard is configured for", func() {
		s := clean(pf.TargetManaged)
		s.Managers = []pf.Manager{ossManager("kueue-system", "kueue-controller-manager")}
		c := check(pf.Judge(pf.TargetManaged, s), pf.CheckKueueControllers)
		Expect(c.Status).To(Equal(pf.Pass))
		Expect(c.Findings[0].Message).To(ContainSubstring("the managed install kueue-guard is configured for"))
	})

	It("for oss, passes one Kueue and fails two", func() {
		s := clean(pf.TargetOSS)
		s.Managers = []pf.Manager{ossManager("kueue-system", "kueue-controller-manager")}
		Expect(check(pf.Judge(pf.TargetOSS, s), pf.CheckKueueControllers).Status).To(Equal(pf.Pass))
		s.Managers = append(s.Managers, ossManager("other", "kueue-controller-manager"))
		c := check(pf.Judge(pf.TargetOSS, s), pf.CheckKueueControllers)
		Expect(c.Status).To(Equal(pf.Fail))
		Expect(c.Findings).To(HaveLen(2))
		Expect(c.Summary).To(ContainSubstring("2 Kueue controller managers run"))
	})

	It("fails each queued workload of an integration the managed install does not support, with its replacement", func() {
		s := clean(pf.TargetManaged)
		s.Workloads = []pf.QueuedWorkload{
			{Integration: lookup("kubeflow.org", "PyTorchJob"), Namespace: "ml", Name: "train", Queue: "team-a"},
			{Integration: lookup("workload.codeflare.dev", "AppWrapper"), Namespace: "ml", Name: "wrapped", Queue: "team-a",
				Workload: "ml/appwrapper-wrapped-1a2b3"},
		}
		c := check(pf.Judge(pf.TargetManaged, s), pf.CheckUnsupportedWorkloads)
		Expect(c.Status).To(Equal(pf.Fail))
		Expect(c.Findings[0].Object).To(Equal("PyTorchJob.kubeflow.org ml/train"))
		Expect(c.Findings[0].Fix).To(ContainSubstring("TrainJob (trainer.kubeflow.org/v1alpha1)"))
		Expect(c.Findings[1].Message).To(ContainSubstring("managed by Kueue through Workload ml/appwrapper-wrapped-1a2b3"))
		Expect(c.Findings[1].Fix).To(ContainSubstring("JobSet"))
	})

	It("for oss, tells which framework the new Configuration must enable", func() {
		s := clean(pf.TargetOSS)
		s.Workloads = []pf.QueuedWorkload{{Integration: lookup("kubeflow.org", "PyTorchJob"), Namespace: "ml", Name: "train", Queue: "q"}}
		c := check(pf.Judge(pf.TargetOSS, s), pf.CheckUnsupportedWorkloads)
		Expect(c.Findings[0].Fix).To(Equal("add kubeflow.org/pytorchjob to integrations.frameworks of the new install's Configuration"))
	})

	It("warns of every Configuration setting the managed install does not carry", func() {
		s := clean(pf.TargetManaged)
		s.Guards[0].Config.InstallProfile = config.ProfileOSS
		m := ossManager("kueue-system", "kueue-controller-manager")
		s.Managers = []pf.Manager{m}
		s.KueueConfigs = []pf.KueueConfiguration{{Manager: m.Identity, Source: "kueue-system/kueue-manager-config",
			Frameworks: []string{"batch/job", "kubeflow.org/pytorchjob"}, External: []string{"Foo.v1.example.com"},
			FeatureGates:               map[string]bool{"TopologyAwareScheduling": true, "LocalQueueMetrics": true},
			ManageJobsWithoutQueueName: true}}
		s.Topologies = 2
		c := check(pf.Judge(pf.TargetManaged, s), pf.CheckKueueConfiguration)
		Expect(c.Status).To(Equal(pf.Warn))
		var msgs []string
		for _, f := range c.Findings {
			msgs = append(msgs, f.Message)
		}
		Expect(msgs).To(ConsistOf(
			ContainSubstring("enables kubeflow.org/pytorchjob"),
			ContainSubstring("externalFrameworks enables Foo.v1.example.com"),
			ContainSubstring("feature gate LocalQueueMetrics=true"),
			ContainSubstring("feature gate TopologyAwareScheduling=true"),
			ContainSubstring("manageJobsWithoutQueueName is true"),
			ContainSubstring("topology-aware scheduling"),
		))
		Expect(check(pf.Judge(pf.TargetOSS, s), pf.CheckKueueConfiguration).Status).To(Equal(pf.Pass), "an upstream install carries them")
	})

	It("says a Configuration it could not read could not be checked", func() {
		s := clean(pf.TargetManaged)
		s.Guards[0].Config.InstallProfile = config.ProfileOSS
		m := ossManager("kueue-system", "kueue-controller-manager")
		s.Managers = []pf.Manager{m}
		s.KueueConfigs = []pf.KueueConfiguration{{Manager: m.Identity, Err: errors.New("forbidden")}}
		Expect(check(pf.Judge(pf.TargetManaged, s), pf.CheckKueueConfiguration).Status).To(Equal(pf.Error))
	})

	It("fails when Kueue's mutating webhooks run before kueue-guard's without being re-invoked", func() {
		s := clean(pf.TargetOSS)
		s.Mutating = append(s.Mutating, kueueMutating("aks-kueue-mutating-webhook-configuration", nil),
			// The JobSet operator's serves Kueue's JobSet and pod paths too; it is not Kueue's.
			mutating("jobset-mutating-webhook-configuration", "/mutate--v1-pod", nil))
		c := check(pf.Judge(pf.TargetOSS, s), pf.CheckWebhookOrder)
		Expect(c.Status).To(Equal(pf.Fail))
		Expect(c.Findings[0].Object).To(Equal("MutatingWebhookConfiguration aks-kueue-mutating-webhook-configuration"))
		Expect(c.Findings[0].Fix).To(ContainSubstring("reinvocationPolicy: IfNeeded"))

		s.Mutating[2] = kueueMutating("aks-kueue-mutating-webhook-configuration", ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy))
		Expect(check(pf.Judge(pf.TargetOSS, s), pf.CheckWebhookOrder).Status).To(Equal(pf.Pass), "re-invoked after ours")
	})

	It("warns when kueue-guard's webhook is not registered", func() {
		s := clean(pf.TargetManaged)
		s.Mutating = s.Mutating[1:]
		c := check(pf.Judge(pf.TargetManaged, s), pf.CheckWebhookOrder)
		Expect(c.Status).To(Equal(pf.Warn))
		Expect(c.Findings[0].Fix).To(ContainSubstring("kueueAbsent"))
	})

	It("warns when kueue-guard's installProfile is not the target's, with the helm upgrade that changes it", func() {
		s := clean(pf.TargetOSS)
		c := check(pf.Judge(pf.TargetManaged, s), pf.CheckKueueGuardProfile)
		Expect(c.Status).To(Equal(pf.Warn))
		Expect(c.Findings[0].Fix).To(ContainSubstring("helm upgrade kueue-guard <chart> --namespace kueue-guard-system --reuse-values --set config.installProfile=managed"))

		s.Guards = nil
		Expect(check(pf.Judge(pf.TargetManaged, s), pf.CheckKueueGuardProfile).Status).To(Equal(pf.Warn), "not found")
		s.Guards = []pf.GuardConfig{{Source: "ConfigMap x/y", Err: errors.New(`unknown field "installprofile"`)}}
		Expect(check(pf.Judge(pf.TargetManaged, s), pf.CheckKueueGuardProfile).Status).To(Equal(pf.Fail), "does not load")
	})

	It("exits 1 when a check failed even if another could not be made", func() {
		s := clean(pf.TargetManaged)
		s.Version = "v1.30.0"
		s.MutatingErr = errors.New("forbidden")
		r := pf.Judge(pf.TargetManaged, s)
		Expect(r.Counts).To(Equal(pf.Counts{Pass: 5, Fail: 1, Error: 1}))
		Expect(r.Result).To(Equal(pf.Fail))
		Expect(r.ExitCode()).To(Equal(pf.ExitFail))
	})
})

var _ = Describe("rendering", func() {
	It("writes one line per check, findings with fixes below, and with --explain why and where to read", func() {
		s := clean(pf.TargetManaged)
		s.Version = "v1.33.1"
		r := pf.Judge(pf.TargetManaged, s)
		var b bytes.Buffer
		Expect(pf.RenderText(&b, r, true)).To(Succeed())
		out := b.String()
		Expect(out).To(ContainSubstring("FAIL  kubernetes-version"))
		Expect(out).To(ContainSubstring("[fail] Kubernetes v1.33.1: the managed Kueue install needs Kubernetes 1.34 or later"))
		Expect(out).To(ContainSubstring("  fix: upgrade the control plane"))
		Expect(out).To(ContainSubstring("see: docs/managed-kueue.md#kubernetes-version"))
		Expect(out).To(ContainSubstring("result: FAIL (6 passed, 1 failed)"))

		b.Reset()
		Expect(pf.RenderJSON(&b, r)).To(Succeed())
		var back map[string]any
		Expect(json.Unmarshal(b.Bytes(), &back)).To(Succeed())
		Expect(back).To(HaveKeyWithValue("result", "fail"))
		Expect(back["checks"]).To(HaveLen(7))
	})
})

var _ = Describe("feature gates", func() {
	It("reads Kueue's --feature-gates value", func() {
		Expect(pf.ParseFeatureGates("TopologyAwareScheduling=true, LocalQueueMetrics=false")).To(Equal(
			map[string]bool{"TopologyAwareScheduling": true, "LocalQueueMetrics": false}))
		Expect(pf.ParseFeatureGates("")).To(BeEmpty())
		_, err := pf.ParseFeatureGates("TopologyAwareScheduling")
		Expect(err).To(MatchError(ContainSubstring("want NAME=true|false")))
		_, err = pf.ParseFeatureGates("A=maybe")
		Expect(err).To(HaveOccurred())
	})
})
