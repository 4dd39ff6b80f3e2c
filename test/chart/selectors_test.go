package charttest

import (
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// queueName is the LocalQueue every namespace of the suite names as its default.
const queueName = "team-queue"

// job builds a queueable Job without a queue name.
func job(namespace string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "chart-", Namespace: namespace},
		Spec: batchv1.JobSpec{PodReplacementPolicy: new(batchv1.Failed), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/busybox:1.36",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
		}}},
	}
}

// deployment builds a Deployment that runs no Kueue controller.
func deployment(namespace string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "chart-", Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// Requests keep the chart's shipped require-resource-requests policy satisfied.
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/busybox:1.36",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
			},
		},
	}
}

// ensureNamespace creates a namespace (or updates an existing one, such as
// kube-system) with labels and the default-queue annotation, and its LocalQueue.
func ensureNamespace(name string, labels map[string]string) {
	GinkgoHelper()
	ns := &corev1.Namespace{}
	err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		err = k8sClient.Create(ctx, ns)
	}
	Expect(err).NotTo(HaveOccurred())
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	maps.Copy(ns.Labels, labels)
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	ns.Annotations[admission.DefaultQueueAnnotation] = queueName
	Expect(k8sClient.Patch(ctx, ns, patch)).To(Succeed())
	lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: queueName},
		Spec: kueue.LocalQueueSpec{ClusterQueue: "cq"}}
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, lq))).To(Succeed())
}

// calls returns how often the API server has called each of our webhooks.
func calls() map[string]float64 {
	GinkgoHelper()
	c, err := testenv.WebhookCalls(ctx, env.Config)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// delta is the number of calls per webhook that fn caused.
func delta(fn func()) map[string]float64 {
	GinkgoHelper()
	before := calls()
	fn()
	after := calls()
	d := map[string]float64{}
	for _, name := range []string{webhookconfig.MutateWorkloadsWebhook, webhookconfig.ValidateWorkloadsWebhook,
		webhookconfig.ValidateKueueControllersWebhook} {
		d[name] = after[name] - before[name]
	}
	return d
}

var _ = Describe("the chart's webhook configurations on a real API server", Ordered, func() {
	const (
		tenant = "chart-tenant"
		optOut = "chart-opted-out"
	)

	BeforeAll(func() {
		ensureNamespace(tenant, nil)
		ensureNamespace(optOut, map[string]string{optOutLabel: "true"})
		ensureNamespace(exemptNamespace, nil)
		ensureNamespace(testenv.ServerNamespace, nil)
		ensureNamespace(metav1.NamespaceSystem, nil)

		By("waiting until the server's cache sees the tenant's default queue")
		Eventually(func(g Gomega) {
			j := job(tenant)
			g.Expect(k8sClient.Create(ctx, j, client.DryRunAll)).To(Succeed())
			g.Expect(j.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queueName))
		}).Should(Succeed())
	})

	It("are stored with the chart's rules and selectors", func() {
		mutating, validating, err := testenv.ChartWebhooks(chartValues())
		Expect(err).NotTo(HaveOccurred())
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: webhookconfig.MutatingName}, m)).To(Succeed())
		Expect(m.Webhooks).To(HaveLen(1))
		Expect(m.Webhooks[0].Rules).To(Equal(mutating[0].Webhooks[0].Rules))
		Expect(m.Webhooks[0].NamespaceSelector).To(Equal(mutating[0].Webhooks[0].NamespaceSelector))
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: webhookconfig.ValidatingName}, v)).To(Succeed())
		Expect(v.Webhooks).To(HaveLen(2))
		for i := range v.Webhooks {
			Expect(v.Webhooks[i].Rules).To(Equal(validating[0].Webhooks[i].Rules))
			Expect(v.Webhooks[i].NamespaceSelector).To(Equal(validating[0].Webhooks[i].NamespaceSelector))
		}
	})

	It("mutate a Job in a tenant namespace annotated with a default queue", func() {
		j := job(tenant)
		d := delta(func() { Expect(k8sClient.Create(ctx, j)).To(Succeed()) })
		Expect(d[webhookconfig.MutateWorkloadsWebhook]).To(BeNumerically(">=", 1))
		Expect(d[webhookconfig.ValidateWorkloadsWebhook]).To(BeNumerically(">=", 1))
		Expect(j.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queueName))
		Expect(j.Annotations).To(HaveKeyWithValue(admission.DefaultedByAnnotation, "namespace-annotation"))
	})

	DescribeTable("never send the workload webhooks a Job from an excluded namespace",
		func(namespace string) {
			j := job(namespace)
			d := delta(func() { Expect(k8sClient.Create(ctx, j)).To(Succeed()) })
			Expect(d[webhookconfig.MutateWorkloadsWebhook]).To(BeZero(), "mutating webhook called")
			Expect(d[webhookconfig.ValidateWorkloadsWebhook]).To(BeZero(), "validating webhook called")
			Expect(j.Labels).NotTo(HaveKey(integrations.QueueNameLabel))
		},
		Entry("kube-system (webhooks.excludeNamespaces)", metav1.NamespaceSystem),
		Entry("the release namespace", testenv.ServerNamespace),
		Entry("a namespace in config.exemptNamespaces", exemptNamespace),
		// The server would default this one (annotation and LocalQueue exist):
		// only the chart's extra selector term keeps the request away.
		Entry("a namespace with the opt-out label of an extra namespaceSelector term", optOut),
	)

	DescribeTable("send the Kueue controller guard a Kueue-looking Deployment from every namespace but the release namespace",
		func(namespace string, guardCalled, workloadCalled bool) {
			// Kueue's chart label passes the guard's match condition; without
			// control-plane=controller-manager the fingerprint does not match, so
			// the guard is called and admits it.
			dep := deployment(namespace)
			dep.Labels = map[string]string{"app.kubernetes.io/name": "kueue"}
			d := delta(func() {
				Expect(k8sClient.Create(ctx, dep, client.DryRunAll)).To(Succeed())
			})
			if guardCalled {
				Expect(d[webhookconfig.ValidateKueueControllersWebhook]).To(BeNumerically(">=", 1))
			} else {
				Expect(d[webhookconfig.ValidateKueueControllersWebhook]).To(BeZero())
			}
			if workloadCalled {
				Expect(d[webhookconfig.MutateWorkloadsWebhook]).To(BeNumerically(">=", 1))
				Expect(d[webhookconfig.ValidateWorkloadsWebhook]).To(BeNumerically(">=", 1))
			} else {
				Expect(d[webhookconfig.MutateWorkloadsWebhook]).To(BeZero())
				Expect(d[webhookconfig.ValidateWorkloadsWebhook]).To(BeZero())
			}
		},
		Entry("kube-system", metav1.NamespaceSystem, true, false),
		Entry("a tenant namespace", tenant, true, true),
		Entry("a namespace in config.exemptNamespaces", exemptNamespace, true, false),
		Entry("a namespace with the workload webhooks' opt-out label", optOut, true, false),
		Entry("the release namespace", testenv.ServerNamespace, false, false),
	)

	DescribeTable("send the controller guard every Deployment the fingerprint can match, whatever Kueue's install is called",
		func(mark func(*appsv1.Deployment)) {
			dep := deployment(tenant)
			mark(dep)
			d := delta(func() {
				// Admitted or denied: what matters is that the guard judged it.
				_ = k8sClient.Create(ctx, dep, client.DryRunAll)
			})
			Expect(d[webhookconfig.ValidateKueueControllersWebhook]).To(BeNumerically(">=", 1))
		},
		Entry("a flat mirror of Kueue's image", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "myregistry.azurecr.io/kueue:v0.17.0"
		}),
		Entry("Kueue's chart label helm.sh/chart, as nameOverride leaves it", func(d *appsv1.Deployment) {
			d.Labels = map[string]string{"helm.sh/chart": "kueue-0.17.0", "app.kubernetes.io/component": "controller"}
		}),
		Entry("Kueue's chart annotation on the pod template", func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{"charts.kueue.x-k8s.io/config-checksum": "abc"}
			d.Spec.Template.Labels["control-plane"] = "controller-manager"
		}),
		Entry("a container port named visibility", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "visibility", ContainerPort: 8082}}
		}),
	)

	It("send the controller guard an ephemeral container added to a running Pod (kubectl debug)", func() {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "debug-me-", Namespace: tenant},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/busybox:1.36",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: "registry.k8s.io/kueue/kueue:v0.17.0"}}}
		d := delta(func() {
			_ = k8sClient.SubResource("ephemeralcontainers").Update(ctx, pod, client.DryRunAll)
		})
		Expect(d[webhookconfig.ValidateKueueControllersWebhook]).To(BeNumerically(">=", 1))
	})

	DescribeTable("never send the controller guard Pods and Deployments that cannot run Kueue",
		func(namespace string) {
			d := delta(func() {
				Expect(k8sClient.Create(ctx, deployment(namespace), client.DryRunAll)).To(Succeed())
			})
			Expect(d[webhookconfig.ValidateKueueControllersWebhook]).To(BeZero(),
				"a webhook that is down must not stop every Deployment in the cluster")
		},
		Entry("kube-system", metav1.NamespaceSystem),
		Entry("a tenant namespace", tenant),
	)

	It("never send the workload webhooks a pod the Job controller creates for its Job, and send everyone else's", func() {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "chart-job-pod-", Namespace: tenant,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "parent",
					UID: "00000000-0000-0000-0000-000000000002", Controller: new(true)}}},
			Spec: deployment(tenant).Spec.Template.Spec,
		}
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		jobController := rest.CopyConfig(env.Config)
		jobController.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:job-controller",
			Groups: []string{"system:masters"}}
		asJobController, err := client.New(jobController, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		d := delta(func() { Expect(asJobController.Create(ctx, pod.DeepCopy(), client.DryRunAll)).To(Succeed()) })
		Expect(d[webhookconfig.MutateWorkloadsWebhook]).To(BeZero())
		Expect(d[webhookconfig.ValidateWorkloadsWebhook]).To(BeZero())

		// The same owner reference from anyone else (here the suite's admin) is a
		// field they wrote: the pod is sent, and judged as a workload of its own.
		d = delta(func() {
			err := k8sClient.Create(ctx, pod.DeepCopy(), client.DryRunAll)
			Expect(err).To(HaveOccurred(), "only the Job's controller may create its parts")
			Expect(err.Error()).To(ContainSubstring("[" + admission.RuleUntrustedOwner + "]"))
		})
		Expect(d[webhookconfig.MutateWorkloadsWebhook]).To(BeNumerically(">=", 1), "a forged owner is sent")
		Expect(d[webhookconfig.ValidateWorkloadsWebhook]).To(BeNumerically(">=", 1))

		top := pod.DeepCopy()
		top.OwnerReferences = nil
		d = delta(func() { Expect(k8sClient.Create(ctx, top, client.DryRunAll)).To(Succeed()) })
		Expect(d[webhookconfig.MutateWorkloadsWebhook]).To(BeNumerically(">=", 1), "a top-level Pod is sent")
	})

	// ControllerRules also name the webhook configuration kinds, but the API
	// server exempts them from every admission webhook (so that no webhook can
	// lock its own configuration): that rule only takes effect offline, in
	// `kueue-guard review`.
	It("never receive webhook configurations, which the API server exempts from admission", func() {
		other := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "chart-test-other-kueue"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "vjob.kueue.x-k8s.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
					Namespace: "other-kueue", Name: "kueue-webhook-service", Path: new("/validate-batch-v1-job")}},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
		d := delta(func() { Expect(k8sClient.Create(ctx, other, client.DryRunAll)).To(Succeed()) })
		Expect(d[webhookconfig.ValidateKueueControllersWebhook]).To(BeZero())
	})
})
