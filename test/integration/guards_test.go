package integration

import (
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// invalid asserts err is the 422 Invalid the guards return, with a cause on the
// given field whose message contains msg.
func invalid(err error, fieldPath, msg string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	var se *apierrors.StatusError
	Expect(errors.As(err, &se)).To(BeTrue(), "not a StatusError: %v", err)
	Expect(se.ErrStatus.Code).To(BeEquivalentTo(422), se.ErrStatus.Message)
	Expect(se.ErrStatus.Reason).To(Equal(metav1.StatusReasonInvalid))
	Expect(se.ErrStatus.Details).NotTo(BeNil())
	Expect(se.ErrStatus.Details.Causes).To(ContainElement(And(
		HaveField("Type", metav1.CauseType("FieldValueForbidden")),
		HaveField("Field", fieldPath),
		HaveField("Message", ContainSubstring(msg)),
	)))
}

func ensureNamespace(name string) {
	err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

func kueueDeployment(namespace, name string) *unstructured.Unstructured {
	GinkgoHelper()
	dep, err := testenv.KueueControllerDeployment("kueue", namespace)
	Expect(err).NotTo(HaveOccurred())
	dep.SetName(name)
	return dep
}

// ensureAllowedKueue creates the allowed Kueue controller in kueue-system, as
// Kueue's chart renders it, unless it is there already.
func ensureAllowedKueue() *unstructured.Unstructured {
	GinkgoHelper()
	ensureNamespace("kueue-system")
	dep := kueueDeployment("kueue-system", "kueue-controller-manager")
	if err := k8sClient.Create(ctx, dep); apierrors.IsAlreadyExists(err) {
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	return dep
}

const queueField = "metadata.labels[kueue.x-k8s.io/queue-name]"

var _ = Describe("guardrails under the managed profile", func() {
	var ns string
	BeforeEach(func() {
		ns = namespace(nil, nil)
		localQueue(ns, "q")
	})

	DescribeTable("unsupported integrations are rejected with a message",
		func(build builder, kind, instead string) {
			err := k8sClient.Create(ctx, build(ns, "w").Queue("q").Obj())
			invalid(err, queueField, kind)
			invalid(err, queueField, "is not supported by the managed Kueue install: Kueue will not manage it, so it would run outside quota")
			invalid(err, queueField, "use "+instead+" instead")
		},
		Entry("AppWrapper", fixtures.AppWrapper, "AppWrapper (workload.codeflare.dev/appwrapper)", "JobSet (jobset.x-k8s.io/v1alpha2)"),
		Entry("LeaderWorkerSet", fixtures.LeaderWorkerSet, "LeaderWorkerSet", "JobSet (jobset.x-k8s.io/v1alpha2)"),
		Entry("PyTorchJob", fixtures.PyTorchJob, "PyTorchJob (kubeflow.org/pytorchjob)", "TrainJob (trainer.kubeflow.org/v1alpha1)"),
	)

	DescribeTable("supported integrations are admitted", func(build builder) {
		Expect(k8sClient.Create(ctx, build(ns, "w").Queue("q").Obj())).To(Succeed())
	},
		Entry("JobSet", fixtures.JobSet),
		Entry("RayJob", fixtures.RayJob),
		Entry("MPIJob", fixtures.MPIJob),
		Entry("TrainJob", fixtures.TrainJob),
	)

	It("lets unsupported kinds without a queue through: they are not Kueue workloads", func() {
		Expect(k8sClient.Create(ctx, fixtures.AppWrapper(ns, "plain").Obj())).To(Succeed())
	})

	It("prints a readable error from kubectl apply", func() {
		manifest, err := yaml.Marshal(fixtures.AppWrapper(ns, "aw").Queue("q").Obj().Object)
		Expect(err).NotTo(HaveOccurred())
		_, stderr, err := env.Kubectl(manifest, "apply", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`The AppWrapper "aw" is invalid: ` +
			`metadata.labels[kueue.x-k8s.io/queue-name]: Forbidden: [kueue_guard.unsupported_integration] AppWrapper`))
	})

	It("denies moving a running Job to another queue, allows it once suspended", func() {
		localQueue(ns, "other")
		job := fixtures.Job(ns, "running").Queue("q").Obj()
		Expect(k8sClient.Create(ctx, job)).To(Succeed())
		job.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": "other"})
		invalid(k8sClient.Update(ctx, job), queueField, `kueue.x-k8s.io/queue-name cannot be changed from "q" to "other"`)

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		Expect(unstructured.SetNestedField(job.Object, true, "spec", "suspend")).To(Succeed())
		job.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": "other"})
		Expect(k8sClient.Update(ctx, job)).To(Succeed())
	})

	// A tenant builds an object whose every walk is expensive: nested maps
	// inside an AppWrapper's wrapped object, which the API server keeps as is.
	It("denies an absurdly nested object before anything walks it", func() {
		aw := fixtures.AppWrapper(ns, "deep").Queue("lq").Obj()
		deep := fixtures.NestedMaps(admission.MaxObjectDepth, "x")
		comps, _, _ := unstructured.NestedSlice(aw.Object, "spec", "components")
		comps[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["x"] = deep
		Expect(unstructured.SetNestedSlice(aw.Object, comps, "spec", "components")).To(Succeed())
		err := k8sClient.Create(ctx, aw, client.DryRunAll)
		Expect(err).To(MatchError(ContainSubstring(`[kueue_guard.object_too_complex] AppWrapper "deep" is nested more than 100 levels deep`)))
	})

	// The same in managedFields, which a client may write and the webhook
	// leaves undecoded: they count as if decoded.
	It("denies an object nested too deep in the managedFields its author wrote", func() {
		job := fixtures.Job(ns, "deep-fields").Queue("q").Obj()
		fields := fixtures.NestedMaps(admission.MaxObjectDepth, "f:x")
		job.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
			"manager": "tenant", "operation": "Update", "apiVersion": "batch/v1",
			"time": "2026-12-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields,
		}}
		err := k8sClient.Create(ctx, job, client.DryRunAll)
		Expect(err).To(MatchError(ContainSubstring(`[kueue_guard.object_too_complex] Job "deep-fields" is nested more than 100 levels deep`)))
	})

	It("warns about a queue that does not exist", func() {
		c, warnings := clientWithWarnings()
		Expect(c.Create(ctx, fixtures.Job(ns, "lost").Queue("nope").Obj())).To(Succeed())
		Expect(warnings.All()).To(ContainSubstring(`LocalQueue "nope" not found in namespace`))
	})

	Describe("the Kueue singleton", func() {
		It("admits the allowed controller as Kueue's chart renders it, its updates and scaling", func() {
			dep := ensureAllowedKueue()
			Expect(unstructured.SetNestedField(dep.Object, int64(3), "spec", "replicas")).To(Succeed())
			Expect(k8sClient.Update(ctx, dep)).To(Succeed())
			dep.SetAnnotations(map[string]string{"rollout": time.Now().String()})
			Expect(k8sClient.Update(ctx, dep)).To(Succeed())
		})

		It("rejects Kueue's chart Deployment applied to a second namespace", func() {
			ensureNamespace("kueue-second")
			err := k8sClient.Create(ctx, kueueDeployment("kueue-second", "kueue-controller-manager"))
			invalid(err, "spec.template.spec.containers[0].image",
				"Deployment kueue-second/kueue-controller-manager would run a second Kueue controller manager")
			invalid(err, "spec.template.spec.containers[0].image",
				"the managed Kueue install (Deployment kueue-system/kueue-controller-manager) owns this cluster")
		})

		DescribeTable("rejects Kueue's chart installed with nameOverride, its image mirrored",
			func(repository, field string, reason string) {
				ensureNamespace("batch-kueue")
				objs, err := testenv.RenderKueueChart("batch", "batch-kueue", map[string]any{"nameOverride": "scheduler",
					"controllerManager": map[string]any{"manager": map[string]any{"image": map[string]any{
						"repository": repository, "tag": "v0.17.0"}}}})
				Expect(err).NotTo(HaveOccurred())
				var dep *unstructured.Unstructured
				for _, o := range objs {
					if o.GetKind() == "Deployment" && strings.HasSuffix(o.GetName(), "controller-manager") {
						dep = o
					}
				}
				Expect(dep).NotTo(BeNil())
				Expect(dep.GetName()).To(Equal("batch-scheduler-controller-manager"), "nameOverride renames it")
				Expect(dep.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "scheduler"))
				err = k8sClient.Create(ctx, dep)
				invalid(err, field, "Deployment batch-kueue/batch-scheduler-controller-manager would run a second Kueue controller manager")
				invalid(err, field, reason)
			},
			Entry("flat, into a private registry", "myregistry.azurecr.io/kueue",
				"spec.template.spec.containers[0].image", `image "myregistry.azurecr.io/kueue:v0.17.0"`),
			Entry(
				"under a name that says nothing",
				"mirror.example.com/platform/scheduler",
				"spec.template.spec.containers[0].image",
				"Kueue's Helm chart (pod template annotation charts.kueue.x-k8s.io/config-checksum, label helm.sh/chart=kueue-0.19.2), container port visibility",
			),
		)

		It("rejects Kueue's manager added to a running Pod as an ephemeral container (kubectl debug)", func() {
			ensureNamespace("debugging")
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "debugging"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/busybox:1.36"}}}}
			Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, pod))).To(Succeed())
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debugger", Image: "registry.k8s.io/kueue/kueue:v0.17.0",
				Args: []string{"--config=/controller_manager_config.yaml"}}}}
			err := k8sClient.SubResource("ephemeralcontainers").Update(ctx, pod)
			invalid(err, "spec.ephemeralContainers[0].image", "Pod debugging/web would run a second Kueue controller manager")

			By("a debugging container that is not Kueue is admitted")
			pod.Spec.EphemeralContainers[0].Image, pod.Spec.EphemeralContainers[0].Args = "registry.k8s.io/busybox:1.36", nil
			Expect(k8sClient.SubResource("ephemeralcontainers").Update(ctx, pod)).To(Succeed())
		})

		It("rejects a renamed copy: other name, other namespace, same image and arguments", func() {
			ensureNamespace("batch-tools")
			dep := kueueDeployment("batch-tools", "job-scheduler")
			labels := map[string]any{"app": "job-scheduler"}
			Expect(unstructured.SetNestedMap(dep.Object, labels, "spec", "selector", "matchLabels")).To(Succeed())
			Expect(unstructured.SetNestedMap(dep.Object, labels, "spec", "template", "metadata", "labels")).To(Succeed())
			dep.SetLabels(nil)
			invalid(k8sClient.Create(ctx, dep), "spec.template.spec.containers[0].image", "would run a second Kueue controller manager")
		})
	})
})

// Under integrations.action warn an unsupported kind is admitted as its author
// wrote it: Kueue does not integrate it, so nothing would ever resume it, and
// kueue-guard must not suspend it for Kueue while Kueue is away (kueueAbsent:
// suspend) nor refuse it for arriving unsuspended.
var _ = Describe("an unsupported kind under integrations.action warn", Ordered, func() {
	var ns string
	BeforeAll(func() {
		cfg := suiteConfig()
		cfg.Integrations.Action = config.IntegrationActionWarn
		cfg.KueueAbsent = config.KueueAbsentSuspend
		Expect(cfg.Validate()).To(BeEmpty())
		startServer(cfg)
		DeferCleanup(func() { startServer(suiteConfig()) })
		ns = namespace(nil, nil)
		localQueue(ns, "q")
	})

	It("is stored unsuspended, with the warning", func() {
		c, warnings := clientWithWarnings()
		aw := fixtures.AppWrapper(ns, "aw").Queue("q").Obj()
		Expect(c.Create(ctx, aw)).To(Succeed())
		Expect(warnings.All()).To(ContainSubstring("AppWrapper is unsupported by managed Kueue"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(aw), aw)).To(Succeed())
		suspended, _, _ := unstructured.NestedBool(aw.Object, "spec", "suspend")
		Expect(suspended).To(BeFalse(), "kueue-guard held a workload Kueue will never resume")
	})

	It("is a queued Job still suspended while Kueue is away: Kueue integrates Jobs", func() {
		job := fixtures.Job(ns, "j").Queue("q").Obj()
		Expect(k8sClient.Create(ctx, job)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		suspended, _, _ := unstructured.NestedBool(job.Object, "spec", "suspend")
		Expect(suspended).To(BeTrue())
	})
})

var _ = Describe("guardrails under the oss profile", Ordered, func() {
	var ns string
	cm := &corev1.ConfigMap{}

	BeforeAll(func() {
		ensureAllowedKueue()
		cfg := suiteConfig()
		cfg.InstallProfile = config.ProfileOSS
		cfg.Controllers.Allowed = nil
		Expect(cfg.Validate()).To(BeEmpty())
		startServer(cfg)
		DeferCleanup(func() { startServer(suiteConfig()) })

		objs, err := testenv.RenderKueueChart("kueue", "kueue-system", nil)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range objs {
			if o.GetKind() == "ConfigMap" && o.GetName() == cluster.KueueDefaultConfigMapName {
				Expect(runtimeConvert(o, cm)).To(Succeed())
			}
		}
		Expect(cm.Data).To(HaveKey(cluster.KueueConfigKey), "Kueue's chart renders its manager ConfigMap")
		cm.Data[cluster.KueueConfigKey] = setFrameworks(cm.Data[cluster.KueueConfigKey], "batch/job")
		cm.ResourceVersion = ""
		if err := k8sClient.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
			Expect(k8sClient.Update(ctx, cm)).To(Succeed())
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		ns = namespace(nil, nil)
		localQueue(ns, "q")
	})

	It("rejects a labeled JobSet while Kueue enables only batch/job", func() {
		Eventually(func(g Gomega) {
			err := k8sClient.Create(ctx, fixtures.JobSet(ns, "js").Queue("q").Obj(), client.DryRunAll)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring("JobSet (jobset.x-k8s.io/jobset) is not enabled in Kueue's integrations.frameworks"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("admits it once Kueue's ConfigMap enables jobset.x-k8s.io/jobset, without a restart", func() {
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data[cluster.KueueConfigKey] = setFrameworks(cm.Data[cluster.KueueConfigKey], "batch/job", "jobset.x-k8s.io/jobset")
		Expect(k8sClient.Update(ctx, cm)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Create(ctx, fixtures.JobSet(ns, "js").Queue("q").Obj())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("lets the first Kueue controller win and rejects another", func() {
		ensureNamespace("kueue-late")
		err := k8sClient.Create(ctx, kueueDeployment("kueue-late", "kueue-controller-manager"))
		invalid(err, "spec.template.spec.containers[0].image",
			"Deployment kueue-system/kueue-controller-manager already runs Kueue in this cluster")
	})
})

// The catalog's scaled kinds are the served ones whose CRDs declare a scale
// subresource, and its replicas path is theirs: what the chart's /scale rules
// and a review's snapshot go by.
var _ = Describe("the catalog's scale subresources", func() {
	It("are exactly those the installed CRDs declare, at the paths they declare", func() {
		for _, in := range integrations.All() {
			if in.GVK.Group == "" || in.GVK.Group == "apps" || in.GVK.Group == "batch" {
				continue
			}
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: in.Resource + "." + in.GVK.Group}, crd)).To(Succeed(), in.Key())
			var path string
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			for _, v := range versions {
				if m := v.(map[string]any); m["name"] == in.GVK.Version {
					path, _, _ = unstructured.NestedString(m, "subresources", "scale", "specReplicasPath")
				}
			}
			Expect(in.ScaleJudged).To(Equal(path != ""), "%s: scale judged iff its CRD has a scale subresource", in.Key())
			if path != "" {
				Expect("."+strings.Join(in.ScaleReplicas, ".")).To(Equal(path), in.Key())
			}
		}
	})
})
