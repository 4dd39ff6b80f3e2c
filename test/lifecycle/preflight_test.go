package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/preflight"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// preflightCLI runs `kueue-guard preflight` against the control plane, as an
// admin with a kubeconfig would.
func preflightCLI(target, output string) (int, string) {
	GinkgoHelper()
	return preflightAs("", target, output)
}

// preflightAs runs it impersonating a user ("" the admin).
func preflightAs(as, target, output string, explain ...bool) (int, string) {
	GinkgoHelper()
	kube := review.NewKubeFlags()
	*kube.KubeConfig = env.KubeconfigPath
	if as != "" {
		kube.Impersonate = &as // as a kubeconfig for that user would
	}
	c := &preflight.CLI{Kube: kube, Target: target, Output: output, Explain: len(explain) > 0 && explain[0]}
	var out, errOut bytes.Buffer
	code := c.Run(ctx, &out, &errOut)
	AddReportEntry(fmt.Sprintf("kueue-guard preflight --target %s -o %s --explain=%t (exit %d)", target, output, c.Explain, code), out.String()+errOut.String())
	return code, out.String() + errOut.String()
}

// statuses are the checks' statuses of a JSON report, by ID.
func statuses(out string) map[string]preflight.Status {
	GinkgoHelper()
	var rep preflight.Report
	Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed(), out)
	got := map[string]preflight.Status{}
	for _, c := range rep.Checks {
		got[c.ID] = c.Status
	}
	return got
}

// mirroredKueue is Kueue's chart as a `helm install RELEASE` into ns renders
// it with nameOverride, its image mirrored flat into a private registry, a
// feature gate on, and the frameworks this cluster's Kueue runs: the manager
// Deployment and the ConfigMap holding its Configuration, with the release
// annotations helm install adds.
func mirroredKueue(release, ns string) (deployment, configMap *unstructured.Unstructured) {
	GinkgoHelper()
	cfgYAML := "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks:\n" +
		"  - batch/job\n  - kubeflow.org/pytorchjob\n  - workload.codeflare.dev/appwrapper\n"
	objs, err := testenv.RenderKueueChart(release, ns, map[string]any{
		"nameOverride": "scheduler",
		"controllerManager": map[string]any{
			"manager":      map[string]any{"image": map[string]any{"repository": "myregistry.azurecr.io/kueue", "tag": "v0.17.0"}},
			"featureGates": []any{map[string]any{"name": "TopologyAwareScheduling", "enabled": true}},
		},
		"managerConfig": map[string]any{"controllerManagerConfigYaml": cfgYAML},
	})
	Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && strings.HasSuffix(o.GetName(), "controller-manager"):
			deployment = o
		case o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "manager-config"):
			configMap = o
		default:
			continue
		}
		o.SetAnnotations(map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns})
	}
	Expect(deployment).NotTo(BeNil())
	Expect(configMap).NotTo(BeNil())
	return deployment, configMap
}

var _ = Describe("preflight before moving to the managed install", Ordered, func() {
	BeforeAll(func() {
		Eventually(serving).Should(Equal(1.0), "Kueue serving")
		// kueue-guard's configuration, where its chart installs it.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.ServerNamespace, Name: "kueue-guard-config",
			Labels: map[string]string{"app.kubernetes.io/part-of": "kueue-guard", "app.kubernetes.io/instance": "kueue-guard"}},
			Data: map[string]string{"config.yaml": "apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\ninstallProfile: oss\n"}}
		Expect(admin.Create(ctx, cm)).To(Succeed())
		DeferCleanup(func() { Expect(admin.Delete(ctx, cm)).To(Succeed()) })
	})

	It("passes a cluster with nothing in the way: exit 0", func() {
		code, out := preflightCLI("managed", "text")
		Expect(code).To(Equal(preflight.ExitPass), out)
		Expect(out).To(ContainSubstring("PASS  kubernetes-version     Kubernetes v1.36.3; the managed Kueue install needs 1.34 or later"))
		Expect(out).To(ContainSubstring("PASS  kueue-controllers      no Kueue controller manager runs in any namespace"))
		Expect(out).To(ContainSubstring("PASS  kueue-version          no Kueue controller manager runs; kueue-guard is tested against Kueue v0.19.2"))
		Expect(out).To(ContainSubstring("PASS  unsupported-workloads  no queued LeaderWorkerSet.leaderworkerset.x-k8s.io, PyTorchJob.kubeflow.org"))
		Expect(out).To(ContainSubstring("PASS  webhook-order"))
		// kueue-guard still guards the OSS install: a step of the switch.
		Expect(out).To(ContainSubstring("WARN  kueue-guard-profile"))
		Expect(out).To(ContainSubstring("--set config.installProfile=managed"))

		code, out = preflightAs("", "managed", "text", true)
		Expect(code).To(Equal(preflight.ExitPass), out)
		Expect(strings.Count(out, "      why: ")).To(Equal(7), "every check says why it matters")
		for _, id := range []string{preflight.CheckKubernetesVersion, preflight.CheckKueueControllers, preflight.CheckKueueVersion, preflight.CheckUnsupportedWorkloads,
			preflight.CheckKueueConfiguration, preflight.CheckWebhookOrder, preflight.CheckKueueGuardProfile} {
			Expect(out).To(ContainSubstring("see: docs/managed-kueue.md#" + id))
		}
	})

	It("says what it could not read for someone without cluster-wide read access, and never passes it: exit 2", func() {
		code, out := preflightAs(user, "managed", "text")
		Expect(code).To(Equal(preflight.ExitError), out)
		Expect(out).To(ContainSubstring("PASS  kubernetes-version"))
		Expect(
			out,
		).To(ContainSubstring(`ERROR kueue-controllers      could not read the workloads that could run Kueue: listing deployments.apps: deployments.apps is forbidden: User "bob" cannot list resource "deployments"`))
		Expect(out).To(ContainSubstring("ERROR unsupported-workloads"))
		Expect(out).To(ContainSubstring("ERROR webhook-order          could not read the mutating webhook configurations: " +
			"listing mutatingwebhookconfigurations.admissionregistration.k8s.io: mutatingwebhookconfigurations.admissionregistration.k8s.io is forbidden"))
		Expect(out).To(ContainSubstring("ERROR kueue-guard-profile    could not read kueue-guard's configuration: " +
			`listing configmaps labelled app.kubernetes.io/part-of=kueue-guard: configmaps is forbidden: User "bob"`))
		Expect(out).To(ContainSubstring("result: ERROR"))
	})

	It("fails the OSS Kueue, a second Kueue from a flat mirror installed with nameOverride, a queued PyTorchJob and an AppWrapper, each with its fix: exit 1", func() {
		// The OSS install being replaced: Kueue's chart as `helm install kueue`
		// into kueue-system renders it, next to the Configuration this
		// cluster's Kueue runs with.
		oss, err := testenv.KueueControllerDeployment("kueue", testenv.KueueNamespace)
		Expect(err).NotTo(HaveOccurred())
		oss.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "kueue", "meta.helm.sh/release-namespace": testenv.KueueNamespace})
		Expect(admin.Create(ctx, oss)).To(Succeed(), "the allowed controller")
		DeferCleanup(func() { Expect(client.IgnoreNotFound(admin.Delete(ctx, oss))).To(Succeed()) })

		ns := "batch-kueue"
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		dep, cm := mirroredKueue("batch", ns)
		Expect(admin.Create(ctx, cm)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(admin.Delete(ctx, cm))).To(Succeed()) })
		err = admin.Create(ctx, dep.DeepCopy())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the singleton guard denies it, not %v", err)
		Expect(err.Error()).To(ContainSubstring("Deployment batch-kueue/batch-scheduler-controller-manager would run a second Kueue controller manager"))
		Expect(err.Error()).To(ContainSubstring(`image "myregistry.azurecr.io/kueue:v0.17.0"`))

		By("installing it anyway while the singleton guard is not in the path (before kueue-guard was installed; its failurePolicy is Ignore)")
		withoutControllerGuard(func() {
			Eventually(func() error { return admin.Create(ctx, dep.DeepCopy()) }).Should(Succeed())
		})
		DeferCleanup(func() { Expect(client.IgnoreNotFound(admin.Delete(ctx, dep))).To(Succeed()) })
		// The Deployment controller makes the allowed install's Pods (never
		// scheduled here; the stray one's the singleton guard refuses):
		// preflight names each Deployment once, not its ReplicaSets and Pods.
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(testenv.KueueNamespace))).To(Succeed())
			g.Expect(pods.Items).NotTo(BeEmpty())
		}).Should(Succeed())

		train := fixtures.PyTorchJob(team, "train").Queue(queue).Requests("cpu", "100m").Obj()
		wrapped := fixtures.AppWrapper(team, "wrapped").Queue(queue).Requests("cpu", "100m").Obj()
		for _, o := range []*unstructured.Unstructured{train, wrapped} {
			Expect(admin.Create(ctx, o)).To(Succeed(), "Kueue manages %s here (oss)", o.GetKind())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(admin.Delete(ctx, o))).To(Succeed()) })
		}

		code, out := preflightCLI("managed", "text")
		Expect(code).To(Equal(preflight.ExitFail), out)
		Expect(out).To(ContainSubstring("FAIL  kueue-controllers      2 Kueue controller manager(s) must be uninstalled before the managed install"))
		Expect(out).To(ContainSubstring(`[fail] Deployment batch-kueue/batch-scheduler-controller-manager: runs a Kueue controller manager (image "myregistry.azurecr.io/kueue:v0.17.0"`))
		Expect(out).To(ContainSubstring("fix: kueue-guard kueue export --output-dir kueue-backup/ (uninstalling Kueue deletes every queue), then helm uninstall batch --namespace batch-kueue"))
		Expect(out).To(ContainSubstring(`[fail] Deployment kueue-system/kueue-controller-manager: runs a Kueue controller manager (image "`))
		Expect(out).To(ContainSubstring("then helm uninstall kueue --namespace kueue-system"))
		Expect(strings.Count(out, "runs a Kueue controller manager")).To(Equal(2), "their ReplicaSets and Pods are the Deployments")
		Expect(out).To(ContainSubstring("FAIL  unsupported-workloads  2 queued workload(s)"))
		Expect(out).To(ContainSubstring(`[fail] PyTorchJob.kubeflow.org lifecycle/train: queue "lq": the managed install does not support PyTorchJob.kubeflow.org`))
		Expect(out).To(ContainSubstring("fix: rewrite it as TrainJob (trainer.kubeflow.org/v1alpha1) before the switch"))
		Expect(out).To(ContainSubstring(`[fail] AppWrapper.workload.codeflare.dev lifecycle/wrapped: queue "lq"`))
		Expect(out).To(ContainSubstring("fix: rewrite it as JobSet (jobset.x-k8s.io/v1alpha2) before the switch"))
		Expect(out).To(ContainSubstring("WARN  kueue-configuration"))
		Expect(out).To(ContainSubstring("[warn] ConfigMap batch-kueue/batch-scheduler-manager-config: feature gate TopologyAwareScheduling=true is set"))
		Expect(out).To(ContainSubstring("integrations.frameworks enables kubeflow.org/pytorchjob, which the managed install does not support"))
		// The release each manager says it runs, its Configuration's gates, and
		// what differs on another minor.
		Expect(out).To(ContainSubstring("WARN  kueue-version"))
		Expect(out).To(ContainSubstring("[pass] Deployment kueue-system/kueue-controller-manager: Kueue v0.19.2, the minor kueue-guard is tested against; feature gates: "))
		Expect(
			out,
		).To(ContainSubstring("[warn] Deployment batch-kueue/batch-scheduler-controller-manager: Kueue v0.17.0; kueue-guard is tested against v0.19.2; feature gates: TopologyAwareScheduling=true"))
		Expect(out).To(ContainSubstring("known differences: pod-level resources"))

		By("publishing each manager's release as kueue_guard_kueue_info, tested or not")
		Eventually(func(g Gomega) {
			series, err := testenv.MetricSeries(srv.MetricAddr, "kueue_guard_kueue_info")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(series).To(ContainElement(And(ContainSubstring(`name="kueue-controller-manager",namespace="kueue-system",tested="true",tested_version="v0.19.2",version="v0.19.2"`),
				ContainSubstring(`feature_gates="VisibilityOnDemand=false"`), HaveSuffix(" 1"))))
			g.Expect(series).To(ContainElement(ContainSubstring(`name="batch-scheduler-controller-manager",namespace="batch-kueue",tested="false",tested_version="v0.19.2",version="v0.17.0"`)))
		}).WithTimeout(time.Minute).Should(Succeed())

		code, out = preflightCLI("managed", "json")
		Expect(code).To(Equal(preflight.ExitFail))
		Expect(statuses(out)).To(Equal(map[string]preflight.Status{
			preflight.CheckKubernetesVersion: preflight.Pass, preflight.CheckKueueControllers: preflight.Fail, preflight.CheckKueueVersion: preflight.Warn,
			preflight.CheckUnsupportedWorkloads: preflight.Fail, preflight.CheckKueueConfiguration: preflight.Warn,
			preflight.CheckWebhookOrder: preflight.Pass, preflight.CheckKueueGuardProfile: preflight.Warn,
		}))

		// Staying on upstream Kueue, the stray second Kueue still fails.
		code, out = preflightCLI("oss", "json")
		Expect(code).To(Equal(preflight.ExitFail), out)
		Expect(statuses(out)).To(HaveKeyWithValue(preflight.CheckKueueControllers, preflight.Fail))
		Expect(statuses(out)).To(HaveKeyWithValue(preflight.CheckUnsupportedWorkloads, preflight.Pass), "upstream Kueue manages both here")

		By("the singleton guard denying any change to the stray install")
		Eventually(func(g Gomega) {
			live := &appsv1.Deployment{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(dep), live)).To(Succeed())
			live.Spec.Template.Spec.Containers[0].Image = "myregistry.azurecr.io/kueue:v0.17.1"
			err := admin.Update(ctx, live)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "denied, not %v", err)
			g.Expect(err.Error()).To(ContainSubstring("Deployment batch-kueue/batch-scheduler-controller-manager would run a second Kueue controller manager"))
		}).Should(Succeed())
	})
})

// withoutControllerGuard runs f with kueue-guard's singleton guard webhook
// out of the API server's path, as before kueue-guard was installed.
func withoutControllerGuard(f func()) {
	GinkgoHelper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	Expect(admin.Get(ctx, client.ObjectKey{Name: webhookconfig.ValidatingName}, vwc)).To(Succeed())
	saved := vwc.DeepCopy()
	vwc.Webhooks = slices.DeleteFunc(vwc.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return w.Name == webhookconfig.ValidateKueueControllersWebhook
	})
	Expect(vwc.Webhooks).To(HaveLen(len(saved.Webhooks) - 1))
	Expect(admin.Update(ctx, vwc)).To(Succeed())
	defer func() {
		Expect(admin.Get(ctx, client.ObjectKey{Name: webhookconfig.ValidatingName}, vwc)).To(Succeed())
		vwc.Webhooks = saved.Webhooks
		Expect(admin.Update(ctx, vwc)).To(Succeed())
	}()
	f()
}
