package tenant

import (
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var names = 0

func name(prefix string) string {
	names++
	return fmt.Sprintf("%s-%d", prefix, names)
}

func podSpec(gpus int64) corev1.PodSpec {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	if gpus > 0 {
		res[gpu] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
		Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}
}

func job(pods int32, gpus int64) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("job"),
		Labels: map[string]string{"kueue.x-k8s.io/max-exec-time-seconds": "3600"}},
		Spec: batchv1.JobSpec{Parallelism: new(pods), Completions: new(pods), PodReplacementPolicy: new(batchv1.Failed),
			Template: corev1.PodTemplateSpec{Spec: podSpec(gpus)}}}
}

// deployment is an unqueued Deployment of replicas CPU-only pods labelled app.
func deployment(app string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": app}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("dep")},
		Spec: appsv1.DeploymentSpec{Replicas: new(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: podSpec(0).Containers}}}}
}

func queued(obj client.Object, q string) client.Object {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[integrations.QueueNameLabel] = q
	obj.SetLabels(l)
	return obj
}

// forgedOwner is an owner reference a tenant can write into any object: a
// controller owner of a kind Kueue manages, which does not exist.
func forgedOwner(apiVersion, kind string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "ghost",
		UID: types.UID("00000000-0000-0000-0000-000000000000"), Controller: new(true)}}
}

// stoppedOrQueued expects a create with a forged owner either refused (Kueue's own
// webhook looks up the owner of a queued object) or admitted queued and
// suspended: never created unqueued.
func stoppedOrQueued(err error, j *batchv1.Job) {
	GinkgoHelper()
	if err != nil {
		Expect(err.Error()).To(Or(ContainSubstring(`"ghost" not found`), ContainSubstring("["+admission.RuleUntrustedOwner+"]")))
		return
	}
	suspendedInQueue(j, queue)
}

// denied expects a 422 whose message names the rule.
func denied(err error, rule string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	Expect(err.Error()).To(ContainSubstring("[" + rule + "]"))
}

// asController creates obj as a controller does: again while kueue-guard
// has not seen its owner yet (its cache may lag the API server by a moment,
// and it refuses the child to be retried, as Kueue's webhook does).
func asController(c client.Client, obj client.Object) error {
	GinkgoHelper()
	var err error
	Eventually(func() bool {
		err = c.Create(ctx, obj)
		return err == nil || !strings.Contains(err.Error(), "retry in a few seconds")
	}).Should(BeTrue(), "kueue-guard never saw the owner: %v", err)
	return err
}

func createAsController(c client.Client, obj client.Object) {
	GinkgoHelper()
	Expect(asController(c, obj)).To(Succeed())
}

func deniedAsController(c client.Client, obj client.Object, rule string) {
	GinkgoHelper()
	denied(asController(c, obj), rule)
}

func get(obj client.Object) client.Object {
	GinkgoHelper()
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

// suspendedInQueue checks what Kueue and kueue-guard made of a created Job: it
// carries the queue and Kueue suspended it.
func suspendedInQueue(j *batchv1.Job, q string) {
	GinkgoHelper()
	get(j)
	Expect(j.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, q))
	Expect(ptr.Deref(j.Spec.Suspend, false)).To(BeTrue(), "Kueue suspended it at creation")
}

var _ = Describe("a namespace user with edit rights", func() {
	Describe("cannot escape with a forged controller owner", func() {
		It("sees the RBAC the test relies on", func() {
			// A tenant can create Jobs in their namespace, not elsewhere.
			Expect(alice.Create(ctx, job(1, 0))).To(Succeed())
			other := job(1, 0)
			other.Namespace = "default"
			Expect(apierrors.IsForbidden(alice.Create(ctx, other))).To(BeTrue())
		})

		// The owner that matters is one that exists: the tenant's own small,
		// queued Job. Kueue's webhooks take a child of an existing Kueue-managed
		// owner as part of the owner's workload and leave it alone; only
		// kueue-guard's rule (a tenant is not a trusted controller) judges it.
		ownParent := func() []metav1.OwnerReference {
			parent := queued(job(1, 0), heldLQ).(*batchv1.Job)
			Expect(alice.Create(ctx, parent)).To(Succeed())
			return []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: parent.Name, UID: parent.UID,
				Controller: new(true)}}
		}

		It("cannot create a Job under their own queued Job", func() {
			owner := ownParent()
			big := job(16, 4) // 64 GPUs that Kueue would count as part of a 0-GPU Job
			big.OwnerReferences = owner
			denied(alice.Create(ctx, big), admission.RuleUntrustedOwner)
			small := job(1, 1)
			small.OwnerReferences = owner
			denied(alice.Create(ctx, small), admission.RuleUntrustedOwner)
		})

		It("cannot create a Pod under their own queued Job", func() {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("pod"), OwnerReferences: ownParent()},
				Spec: podSpec(1)}
			// Kueue's pod webhook reads the owner from its cache, which may not
			// hold the new Job yet: it then refuses the Pod for that, and the
			// Pod is sent again until kueue-guard's rule is what refuses it.
			var err error
			Eventually(func() string {
				if err = alice.Create(ctx, p.DeepCopy()); err == nil {
					return "created"
				}
				return err.Error()
			}).WithTimeout(30 * time.Second).ShouldNot(ContainSubstring(`Job.batch "` + p.OwnerReferences[0].Name + `" not found`))
			denied(err, admission.RuleUntrustedOwner)
		})

		It("cannot re-parent an existing queued Job under another", func() {
			owner := ownParent()
			j := queued(job(1, 1), heldLQ).(*batchv1.Job)
			Expect(alice.Create(ctx, j)).To(Succeed())
			patch := client.MergeFrom(j.DeepCopy())
			j.OwnerReferences = owner
			denied(alice.Patch(ctx, j, patch), admission.RuleUntrustedOwner)
		})

		DescribeTable("an owner that does not exist never leaves a Job unqueued",
			func(apiVersion, kind string) {
				j := job(1, 2)
				j.OwnerReferences = forgedOwner(apiVersion, kind)
				stoppedOrQueued(alice.Create(ctx, j), j)
			},
			Entry("a JobSet", "jobset.x-k8s.io/v1alpha2", "JobSet"),
			Entry("an owner at an API that is not served", "example.com/v1", "Job"),
			Entry("a ReplicaSet (its pods are plain pods to Kueue)", "apps/v1", "ReplicaSet"),
		)

		It("a JobSet naming a TrainJob owner is refused", func() {
			js := fixtures.JobSet(team, name("js")).ControlledBy("trainer.kubeflow.org/v1alpha1", "TrainJob", "ghost").Obj()
			// Queued by kueue-guard, Kueue's own JobSet webhook looks the owner up
			// and refuses; kueue-guard's owner guard would refuse it next.
			err := alice.Create(ctx, js)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(Or(ContainSubstring(`"ghost" not found`), ContainSubstring("["+admission.RuleUntrustedOwner+"]")))
		})
	})

	Describe("cannot take a queued workload out of its queue", func() {
		It("denies removing the queue of a suspended Job, and resuming it without one", func() {
			j := queued(job(1, 1), heldLQ).(*batchv1.Job)
			Expect(alice.Create(ctx, j)).To(Succeed())
			suspendedInQueue(j, heldLQ)

			patch := client.MergeFrom(j.DeepCopy())
			delete(j.Labels, integrations.QueueNameLabel)
			denied(alice.Patch(ctx, j, patch), admission.RuleQueueLabelRemoved)

			get(j)
			patch = client.MergeFrom(j.DeepCopy())
			j.Labels[integrations.QueueNameLabel] = ""
			Expect(alice.Patch(ctx, j, patch)).NotTo(Succeed(), "an empty queue is no queue")
		})

		It("denies resuming a Job without a queue once its namespace owes one", func() {
			// Created suspended and unqueued while the namespace had no default.
			j := job(1, 0)
			j.Namespace, j.Spec.Suspend = lateTeam, new(true)
			Expect(alice.Create(ctx, j)).To(Succeed())
			get(j)
			Expect(j.Labels).NotTo(HaveKey(integrations.QueueNameLabel))

			ns := &corev1.Namespace{}
			Expect(admin.Get(ctx, client.ObjectKey{Name: lateTeam}, ns)).To(Succeed())
			ns.Annotations = map[string]string{admission.DefaultQueueAnnotation: queue}
			Expect(admin.Update(ctx, ns)).To(Succeed())

			// Once the server's cache has the annotation, the resume is refused.
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
				patch := client.MergeFrom(j.DeepCopy())
				j.Spec.Suspend = new(false)
				err := alice.Patch(ctx, j, patch)
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).To(ContainSubstring("[" + admission.RuleResumeWithoutQueue + "]"))
			}).Should(Succeed())
			get(j)
			Expect(ptr.Deref(j.Spec.Suspend, false)).To(BeTrue())
		})

		It("denies removing the queue label of a gated Pod", func() {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("pod")}, Spec: podSpec(0)}
			queued(p, heldLQ)
			Expect(alice.Create(ctx, p)).To(Succeed())
			get(p)
			Expect(p.Spec.SchedulingGates).NotTo(BeEmpty())
			patch := client.MergeFrom(p.DeepCopy())
			delete(p.Labels, integrations.QueueNameLabel)
			denied(alice.Patch(ctx, p, patch), admission.RuleQueueLabelRemoved)
		})
	})

	Describe("cannot grow a workload after it was judged", func() {
		It("denies patching a queued 1 x 4-GPU Job to 4 pods (16 GPUs) under a 4-GPU cap", func() {
			j := queued(job(1, 4), heldLQ).(*batchv1.Job)
			j.Spec.Completions = ptr.To[int32](4) // Kueue counts min(parallelism, completions) pods
			Expect(alice.Create(ctx, j)).To(Succeed())
			suspendedInQueue(j, heldLQ)
			patch := client.MergeFrom(j.DeepCopy())
			j.Spec.Parallelism = ptr.To[int32](4)
			denied(alice.Patch(ctx, j, patch), "kueue_guard.max_gpus_per_workload")
		})

		It("cannot drop the requests of a queued Job (BestEffort pods are charged nothing)", func() {
			j := queued(job(1, 0), heldLQ).(*batchv1.Job)
			Expect(alice.Create(ctx, j)).To(Succeed())
			suspendedInQueue(j, heldLQ)
			patch := client.MergeFrom(j.DeepCopy())
			j.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			// The API server already refuses a Job's pod template change; kueue-guard
			// judges such drops where a kind allows them (input.workload.grows).
			Expect(alice.Patch(ctx, j, patch)).NotTo(Succeed())
		})

		// statefulSet is a 2-replica StatefulSet queued in the held queue by its
		// own label, or only by its pod template's.
		statefulSet := func(byTemplate bool) *appsv1.StatefulSet {
			own, tmpl := map[string]string{integrations.QueueNameLabel: heldLQ}, map[string]string{"app": "sts"}
			if byTemplate {
				own, tmpl = nil, map[string]string{"app": "sts", integrations.QueueNameLabel: heldLQ}
			}
			return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("sts"), Labels: own},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sts"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl},
						Spec: corev1.PodSpec{Containers: podSpec(1).Containers}}}}
		}

		DescribeTable("deny kubectl scale of a queued StatefulSet between two sizes",
			func(byTemplate bool) {
				sts := statefulSet(byTemplate)
				Expect(alice.Create(ctx, sts)).To(Succeed())
				// The server judges a scale from its cache, which may not have
				// the StatefulSet yet: it refuses the scale for a retry then.
				// The scale is never let through meanwhile: replicas stay 2.
				Eventually(func(g Gomega) {
					scale := &autoscalingScale{}
					g.Expect(alice.SubResource("scale").Get(ctx, sts, scale.obj())).To(Succeed())
					scale.setReplicas(5)
					err := alice.SubResource("scale").Update(ctx, sts, client.WithSubResourceBody(scale.obj()))
					g.Expect(err).To(HaveOccurred())
					g.Expect(err.Error()).To(ContainSubstring("[" + admission.RulePodGroupResize + "]"))
				}).WithTimeout(10 * time.Second).Should(Succeed())
				get(sts)
				Expect(*sts.Spec.Replicas).To(BeEquivalentTo(2))
			},
			Entry("queued by its own label", false),
			// Kueue queues the pods by the template's label, so the scale is
			// judged although the StatefulSet itself has none.
			Entry("queued only by its pod template", true),
		)

		// The cache keeps a queued workload whole only up to 256 KiB; a tenant
		// who makes one larger cannot have its scale judged on a stripped copy.
		It("refuses kubectl scale of a queued StatefulSet too large to keep whole, with the fix", func() {
			sts := statefulSet(false)
			sts.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PAD", Value: strings.Repeat("x", 300<<10)}}
			Expect(alice.Create(ctx, sts)).To(Succeed())
			Eventually(func(g Gomega) {
				scale := &autoscalingScale{}
				g.Expect(alice.SubResource("scale").Get(ctx, sts, scale.obj())).To(Succeed())
				scale.setReplicas(5)
				err := alice.SubResource("scale").Update(ctx, sts, client.WithSubResourceBody(scale.obj()))
				g.Expect(err).To(MatchError(ContainSubstring("change spec.replicas with an update of the object instead")))
			}).WithTimeout(10 * time.Second).Should(Succeed())
			get(sts)
			Expect(*sts.Spec.Replicas).To(BeEquivalentTo(2))
		})
	})

	Describe("cannot put a second queue where Kueue reads labels", func() {
		It("denies a pod template queue that differs from the Job's", func() {
			j := queued(job(1, 0), queue).(*batchv1.Job)
			j.Spec.Template.Labels = map[string]string{integrations.QueueNameLabel: heldLQ}
			denied(alice.Create(ctx, j), admission.RuleLabelMismatch)
		})

		It("cannot give a Deployment's pods another priority class than the Deployment's", func() {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("dep"),
				Labels: map[string]string{integrations.QueueNameLabel: queue, integrations.PriorityClassLabel: "low"}},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d",
						integrations.PriorityClassLabel: "critical"}}, Spec: corev1.PodSpec{Containers: podSpec(0).Containers}}}}
			// Kueue's Deployment webhook copies the Deployment's label over the
			// template's before kueue-guard's validating webhook sees it; either
			// way the pods run at the Deployment's class, which was judged.
			if err := alice.Create(ctx, d); err == nil {
				get(d)
				Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(integrations.PriorityClassLabel, "low"))
			} else {
				denied(err, admission.RuleLabelMismatch)
			}
		})
	})

	It("cannot run an unqueued workload where the platform says nothing runs outside Kueue", func() {
		j := job(1, 0)
		j.Namespace = strictTeam
		denied(alice.Create(ctx, j), admission.RuleUnqueuedWorkload)
		queued(j, queue)
		Expect(alice.Create(ctx, j)).To(Succeed(), "with a queue it is admitted (a missing LocalQueue only warns)")
		suspendedInQueue(j, queue)
	})

	Describe("cannot slip through while defaulting is down", func() {
		It("is denied by the validating backstop, and retried once defaulting is back", func() {
			m := &admissionregistrationv1.MutatingWebhookConfiguration{}
			Expect(admin.Get(ctx, client.ObjectKey{Name: webhookconfig.MutatingName}, m)).To(Succeed())
			saved := m.DeepCopy()
			Expect(admin.Delete(ctx, m)).To(Succeed())
			DeferCleanup(func() {
				saved.ResourceVersion = ""
				Expect(client.IgnoreAlreadyExists(admin.Create(ctx, saved))).To(Succeed())
			})
			j := job(1, 0)
			// Dry runs: until the API server has dropped the deleted
			// configuration from its cache, a create is still defaulted, and
			// a real one would leave the Job behind for the retry below.
			Eventually(func() error { return alice.Create(ctx, j.DeepCopy(), client.DryRunAll) }).Should(MatchError(ContainSubstring(
				"[" + admission.RuleDefaultingBackstop + "]")))

			saved.ResourceVersion = ""
			Expect(admin.Create(ctx, saved)).To(Succeed())
			var created *batchv1.Job
			Eventually(func() error { created = j.DeepCopy(); return alice.Create(ctx, created) }).Should(Succeed())
			// The create's answer is the object as stored, before Kueue admits it.
			Expect(created.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue))
			Expect(ptr.Deref(created.Spec.Suspend, false)).To(BeTrue(), "Kueue suspended it at creation")
		})
	})
})

var _ = Describe("the real controllers, with every shipped policy loaded", func() {
	// Kueue here integrates no AppWrapper (nor does the managed install), so
	// its webhook does not hold one: the refusal names the kind, and does not
	// ask for a hold Kueue would never release.
	It("an AppWrapper in a queue is refused for its kind alone, not for arriving unheld", func() {
		err := admin.Create(ctx, fixtures.AppWrapper(team, "aw").Queue(queue).Obj())
		denied(err, admission.RuleUnsupportedIntegration)
		Expect(err.Error()).NotTo(ContainSubstring("[" + admission.RuleNotHeld + "]"))
	})

	It("Kueue admits and unsuspends a queued Job, and the Job controller creates its pods untouched", func() {
		j := job(2, 1)
		Expect(alice.Create(ctx, j)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
			g.Expect(ptr.Deref(j.Spec.Suspend, true)).To(BeFalse(), "Kueue admitted and resumed it")
		}, 2*time.Minute).Should(Succeed())
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(team), client.MatchingLabels{"job-name": j.Name})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(p.Labels).NotTo(HaveKey(integrations.QueueNameLabel), "a Job's pods are part of the Job, not workloads")
				g.Expect(p.Spec.SchedulingGates).To(BeEmpty())
			}
		}, time.Minute).Should(Succeed())
		wls := &kueue.WorkloadList{}
		Expect(admin.List(ctx, wls, client.InNamespace(team))).To(Succeed())
		Expect(wls.Items).NotTo(BeEmpty())
	})

	It("a Deployment gets its ReplicaSet and pods, each pod queued and gated as Kueue does", func() {
		d := deployment("web", 2)
		Expect(alice.Create(ctx, d)).To(Succeed())
		get(d)
		Expect(d.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue))
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(team), client.MatchingLabels{"app": "web"})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(metav1.GetControllerOf(&p).Kind).To(Equal("ReplicaSet"))
				g.Expect(p.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue))
			}
		}, time.Minute).Should(Succeed())
	})

	It("a CronJob's Job is created by the CronJob controller, queued", func() {
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name("cron")},
			Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kueue.x-k8s.io/max-exec-time-seconds": "60"}},
				Spec: batchv1.JobSpec{PodReplacementPolicy: new(batchv1.Failed),
					Template: corev1.PodTemplateSpec{Spec: podSpec(0)}}}}}
		Expect(alice.Create(ctx, cj)).To(Succeed())
		Eventually(func(g Gomega) {
			jobs := &batchv1.JobList{}
			g.Expect(admin.List(ctx, jobs, client.InNamespace(team))).To(Succeed())
			var found bool
			for _, j := range jobs.Items {
				if owner := metav1.GetControllerOf(&j); owner != nil && owner.Name == cj.Name {
					found = true
					g.Expect(j.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, queue))
				}
			}
			g.Expect(found).To(BeTrue())
		}, 2*time.Minute, time.Second).Should(Succeed())
	})
})

// autoscalingScale is a Scale read and written through the scale subresource.
type autoscalingScale struct{ s autoscalingv1.Scale }

func (a *autoscalingScale) obj() *autoscalingv1.Scale { return &a.s }

func (a *autoscalingScale) setReplicas(n int32) { a.s.Spec.Replicas = n }
