package tenant

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueueorder"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Only Kueue releases a queued workload: what the tenant writes into the
// object (Kueue's own markers, owners Kueue walks through) and the order of
// the webhooks must not leave a workload stored unheld. Each spec checks the
// object as the API server stored it, with the real Kueue manager and its
// webhooks in front.
var _ = Describe("only Kueue releases a queued workload", func() {
	gated := func(p *corev1.Pod) bool {
		for _, g := range p.Spec.SchedulingGates {
			if g.Name == integrations.KueueAdmissionGate {
				return true
			}
		}
		return false
	}
	heldPod := func() *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("pod"),
			Labels: map[string]string{integrations.QueueNameLabel: heldLQ}}, Spec: podSpec(0)}
		Expect(alice.Create(ctx, p)).To(Succeed())
		Expect(gated(get(p).(*corev1.Pod))).To(BeTrue(), "Kueue gated it")
		return p
	}

	Describe("Kueue's markers, written by the tenant", func() {
		It("refuses them at create where Kueue would not write them", func() {
			claimsParent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("pod"),
				Annotations: map[string]string{"kueue.x-k8s.io/pod-suspending-parent": "deployment"}}, Spec: podSpec(4)}
			denied(alice.Create(ctx, claimsParent), admission.RuleKueueMarker)

			prebuilt := queued(job(1, 4), queue).(*batchv1.Job)
			prebuilt.Labels["kueue.x-k8s.io/prebuilt-workload-name"] = "someone-elses"
			denied(alice.Create(ctx, prebuilt), admission.RuleKueueMarker)
		})

		It("accepts the one Kueue itself writes, and the pod group labels users write", func() {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("pod"),
				Labels: map[string]string{integrations.QueueNameLabel: heldLQ, "kueue.x-k8s.io/managed": "true"}}, Spec: podSpec(0)}
			Expect(alice.Create(ctx, p)).To(Succeed())
			Expect(gated(get(p).(*corev1.Pod))).To(BeTrue())
		})

		It("refuses removing the managed label or Kueue's gate by a patch", func() {
			p := heldPod()
			unmarked := p.DeepCopy()
			delete(unmarked.Labels, "kueue.x-k8s.io/managed")
			denied(alice.Patch(ctx, unmarked, client.MergeFrom(p)), admission.RuleKueueMarker)

			ungated := p.DeepCopy()
			ungated.Spec.SchedulingGates = nil
			denied(alice.Patch(ctx, ungated, client.MergeFrom(p)), admission.RuleOnlyKueueReleases)
			Expect(gated(get(p).(*corev1.Pod))).To(BeTrue())
		})

		It("refuses resuming a queued Job, which Kueue has not admitted", func() {
			j := queued(job(1, 0), heldLQ).(*batchv1.Job)
			Expect(alice.Create(ctx, j)).To(Succeed())
			suspendedInQueue(j, heldLQ)
			resumed := j.DeepCopy()
			resumed.Spec.Suspend = new(false)
			denied(alice.Patch(ctx, resumed, client.MergeFrom(j)), admission.RuleOnlyKueueReleases)
			suspendedInQueue(j, heldLQ)
		})
	})

	Describe("a queued Job that Kueue's webhook never sees", func() {
		It("is refused as not held, where trusting the path would store it running", func() {
			// A broken install: Kueue's Job webhook skips objects with a label
			// the tenant can write. kueue-guard's mutating path leaves a queue
			// the requester wrote to Kueue, so only the outcome check is left.
			kueueCfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			Expect(admin.Get(ctx, client.ObjectKey{Name: testenv.KueueMutatingWebhookConfiguration}, kueueCfg)).To(Succeed())
			saved := kueueCfg.DeepCopy()
			skipped := false
			for i := range kueueCfg.Webhooks {
				if kueueorder.WebhookPath(kueueCfg.Webhooks[i].ClientConfig) == kueueorder.KueueMutatingPath(batchv1.SchemeGroupVersion.WithKind("Job")) {
					kueueCfg.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: "skip-kueue", Operator: metav1.LabelSelectorOpDoesNotExist}}}
					skipped = true
				}
			}
			Expect(skipped).To(BeTrue(), "Kueue's Job webhook is registered")
			Expect(admin.Update(ctx, kueueCfg)).To(Succeed())
			DeferCleanup(func() {
				current := &admissionregistrationv1.MutatingWebhookConfiguration{}
				Expect(admin.Get(ctx, client.ObjectKey{Name: saved.Name}, current)).To(Succeed())
				current.Webhooks = saved.Webhooks
				Expect(admin.Update(ctx, current)).To(Succeed())
			})
			j := queued(job(1, 4), heldLQ).(*batchv1.Job)
			j.Labels["skip-kueue"] = "yes"
			j.Spec.Suspend = new(false)
			// Until the API server has the new selector, Kueue still holds it.
			Eventually(func() error { return alice.Create(ctx, j.DeepCopy(), client.DryRunAll) }, 30*time.Second).
				Should(MatchError(ContainSubstring("[" + admission.RuleNotHeld + "]")))
			err := alice.Create(ctx, j.DeepCopy())
			denied(err, admission.RuleNotHeld)
			Expect(err.Error()).To(ContainSubstring("spec.suspend is not true"))
		})
	})

	Describe("owner chains Kueue walks through a ReplicaSet", func() {
		It("refuses a tenant's ReplicaSet under their small queued Job, and objects and ReplicaSets under a ReplicaSet", func() {
			parent := queued(job(1, 0), heldLQ).(*batchv1.Job)
			Expect(alice.Create(ctx, parent)).To(Succeed())
			get(parent)
			owner := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: parent.Name, UID: parent.UID, Controller: new(true)}}
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("rs"), OwnerReferences: owner},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rs"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rs"}}, Spec: corev1.PodSpec{Containers: podSpec(4).Containers}}}}
			denied(alice.Create(ctx, rs), admission.RuleUntrustedOwner)

			// An existing ReplicaSet (here the admin's, under no workload):
			// pods and Jobs a tenant hangs under it are refused too.
			mine := rs.DeepCopy()
			mine.Name, mine.OwnerReferences = name("rs"), nil
			mine.Spec.Replicas = ptr.To[int32](0)
			Expect(admin.Create(ctx, mine)).To(Succeed())
			underRS := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: mine.Name, UID: mine.UID, Controller: new(true)}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("pod"), OwnerReferences: underRS}, Spec: podSpec(4)}
			denied(alice.Create(ctx, pod), admission.RuleUntrustedOwner)
			big := job(1, 4)
			big.OwnerReferences = underRS
			denied(alice.Create(ctx, big), admission.RuleUntrustedOwner)
			// Nor a ReplicaSet of hers under it: Kueue would walk through both.
			nested := rs.DeepCopy()
			nested.Name, nested.OwnerReferences = name("rs"), underRS
			denied(alice.Create(ctx, nested), admission.RuleUntrustedOwner)
		})
	})

	Describe("with Kueue's mutating webhook configuration sorting first, as an aks-kueue release's does", func() {
		var warnings *testenv.Warnings
		var warned client.Client

		BeforeEach(func() {
			kueueCfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			Expect(admin.Get(ctx, client.ObjectKey{Name: testenv.KueueMutatingWebhookConfiguration}, kueueCfg)).To(Succeed())
			first := kueueCfg.DeepCopy()
			first.ObjectMeta = metav1.ObjectMeta{Name: "aks-kueue-mutating-webhook-configuration"}
			Expect(first.Name < webhookconfig.MutatingName).To(BeTrue())
			Expect(admin.Create(ctx, first)).To(Succeed())
			Expect(admin.Delete(ctx, kueueCfg)).To(Succeed())
			DeferCleanup(func() {
				kueueCfg.ResourceVersion = ""
				Expect(client.IgnoreAlreadyExists(admin.Create(ctx, kueueCfg))).To(Succeed())
				Expect(client.IgnoreNotFound(admin.Delete(ctx, first))).To(Succeed())
			})
			warnings = &testenv.Warnings{}
			c := rest.CopyConfig(env.Config)
			c.Impersonate = rest.ImpersonationConfig{UserName: tenant, Groups: []string{"system:authenticated"}}
			c.WarningHandler = warnings
			var err error
			warned, err = client.New(c, client.Options{Scheme: env.Scheme})
			Expect(err).NotTo(HaveOccurred())
			// kueue-guard sees the new order in its cache, then names it.
			Eventually(func() string {
				_ = warned.Create(ctx, job(1, 0), client.DryRunAll)
				return warnings.Take()
			}, 30*time.Second).Should(ContainSubstring("aks-kueue-mutating-webhook-configuration"))
		})

		It("a defaulted Job is stored suspended, and Kueue admits and resumes it", func() {
			j := job(1, 0)
			Expect(warned.Create(ctx, j)).To(Succeed())
			Expect(warnings.Take()).To(ContainSubstring("webhooks.mutatingName"))
			// The create's answer is the object as stored, before Kueue admits it.
			Expect(j.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue))
			Expect(ptr.Deref(j.Spec.Suspend, false)).To(BeTrue(), "stored suspended")
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
				g.Expect(ptr.Deref(j.Spec.Suspend, true)).To(BeFalse(), "Kueue admitted and resumed it")
			}, 2*time.Minute).Should(Succeed())
		})

		It("a defaulted Pod is stored gated and marked, and Kueue admits and ungates it", func() {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("pod")}, Spec: podSpec(0)}
			Expect(warned.Create(ctx, p)).To(Succeed())
			Expect(p.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue))
			Expect(p.Labels).To(HaveKeyWithValue("kueue.x-k8s.io/managed", "true"))
			Expect(gated(p)).To(BeTrue())
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
				g.Expect(gated(p)).To(BeFalse(), "Kueue admitted and ungated it")
			}, 2*time.Minute).Should(Succeed())
		})

		It("a defaulted Deployment's pods are gated by Kueue, as their template is marked", func() {
			d := deployment("order-first", 1)
			Expect(warned.Create(ctx, d)).To(Succeed())
			get(d)
			Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("kueue.x-k8s.io/pod-suspending-parent", "deployment"))
			Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue))
		})
	})

	Describe("a trusted operator's child of a parent Kueue ignores", func() {
		It("is judged and held as a workload of its own: a RayJob on an existing cluster's submitter Job", func() {
			// KubeRay (trusted) makes a RayJob's submitter Job; here it is played, to
			// make one the tenant sizes (the real operator waits for the cluster).
			Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "kuberay-edit"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ray-system", Name: "kuberay-operator"}}})).To(Succeed())

			rayJob := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob",
				"metadata": map[string]any{"namespace": team, "name": name("on-cluster")},
				"spec":     map[string]any{"entrypoint": "python train.py", "clusterSelector": map[string]any{"ray.io/cluster": "shared"}}}}
			Expect(alice.Create(ctx, rayJob)).To(Succeed())
			Expect(rayJob.GetLabels()).NotTo(HaveKey(integrations.QueueNameLabel), "Kueue ignores it whatever its queue: not defaulted")

			kuberay := impersonatingServiceAccount("ray-system", "kuberay-operator")
			owner := []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: rayJob.GetName(), UID: rayJob.GetUID(), Controller: new(true)}}
			big := job(1, 8)
			big.OwnerReferences = owner
			deniedAsController(kuberay, big, "kueue_guard.max_gpus_per_workload")

			submitter := job(1, 1)
			submitter.OwnerReferences = owner
			createAsController(kuberay, submitter)
			Expect(submitter.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue), "queued as a workload of its own")
			Expect(ptr.Deref(submitter.Spec.Suspend, false)).To(BeTrue(), "stored suspended, before Kueue admits it")
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(submitter), submitter)).To(Succeed())
				g.Expect(ptr.Deref(submitter.Spec.Suspend, true)).To(BeFalse(), "Kueue admitted it as its own workload")
			}, 2*time.Minute).Should(Succeed())
		})
	})
})

// impersonatingServiceAccount is a client that acts as a service account.
func impersonatingServiceAccount(namespace, name string) client.Client {
	c := rest.CopyConfig(env.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return cl
}
