package lifecycle

import (
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func requests() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}
}

// queuedJob is a Job in the team's queue that asks to run at once.
func queuedJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name, Labels: map[string]string{integrations.QueueNameLabel: queue}},
		Spec: batchv1.JobSpec{Suspend: new(false), PodReplacementPolicy: new(batchv1.Failed), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/busybox:1.36", Resources: requests()}},
		}}},
	}
}

func queuedPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name, Labels: map[string]string{integrations.QueueNameLabel: queue}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/busybox:1.36", Resources: requests()}}},
	}
}

func hasGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == integrations.KueueAdmissionGate {
			return true
		}
	}
	return false
}

// admittedOwners lists the objects (Jobs, Pods) of the team whose Workloads Kueue
// admitted.
func admittedOwners(g Gomega) []string {
	var wls kueue.WorkloadList
	g.Expect(admin.List(ctx, &wls, client.InNamespace(team))).To(Succeed())
	var out []string
	for _, wl := range wls.Items {
		if wl.Status.Admission == nil {
			continue
		}
		for _, ref := range wl.OwnerReferences {
			out = append(out, ref.Kind+"/"+ref.Name)
		}
	}
	return out
}

func serving() float64 {
	v, err := testenv.MetricValue(srv.MetricAddr, "kueue_guard_kueue_serving")
	Expect(err).NotTo(HaveOccurred())
	return v
}

// Kueue stopped and its webhook configurations removed (an uninstall, or the
// gap of a reinstall), while bob, a namespace user, creates and edits queued
// workloads: nothing runs outside quota, and Kueue admits everything once it
// is back.
var _ = Describe("while Kueue is away", Ordered, func() {
	It("is Kueue's to suspend and admit a queued Job while it serves", func() {
		Eventually(serving).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(1.0))
		Expect(bob.Create(ctx, queuedJob("before"))).To(Succeed())
		Eventually(func(g Gomega) {
			j := &batchv1.Job{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: "before"}, j)).To(Succeed())
			g.Expect(j.Spec.Suspend).To(HaveValue(BeFalse()), "admitted and resumed by Kueue")
			g.Expect(admittedOwners(g)).To(ContainElement("Job/before"))
		}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("a queued Deployment, its Pod admitted, and a queued CronJob whose Jobs ask to run, made while Kueue serves")
		Expect(bob.Create(ctx, queuedDeployment(servedWeb, 1))).To(Succeed())
		Expect(bob.Create(ctx, queuedCronJob(nightly))).To(Succeed())
		Expect(bob.Create(ctx, queuedStatefulSet(servedDB))).To(Succeed())
		Expect(bob.Create(ctx, queuedLeaderWorkerSet(servedLWS))).To(Succeed())
		Eventually(func(g Gomega) {
			pods := webPods(g)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(hasGate(&pods[0])).To(BeFalse(), "admitted by Kueue")
		}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		cj := &batchv1.CronJob{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: nightly}, cj)).To(Succeed())
		Expect(cj.Spec.JobTemplate.Spec.Suspend).To(BeNil(), "its Jobs ask to run: Kueue's webhook suspends each")
	})

	It("is marked once Kueue's manager stops and its webhooks are removed", func() {
		Expect(kq.Stop()).To(Succeed())
		Eventually(serving).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(BeZero())
		cronJobsBefore = cronJobs(Default)
	})

	It("suspends the Jobs a queued CronJob makes and gates the Pods a queued Deployment scales up to: what the controllers create is judged too", func() {
		d := &appsv1.Deployment{}
		Expect(bob.Get(ctx, client.ObjectKey{Namespace: team, Name: servedWeb}, d)).To(Succeed())
		d.Spec.Replicas = ptr.To[int32](2)
		Expect(bob.Update(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			pods := webPods(g)
			g.Expect(pods).To(HaveLen(2))
			gated := 0
			for i := range pods {
				if hasGate(&pods[i]) {
					gated++
					g.Expect(pods[i].Labels).To(HaveKeyWithValue("kueue.x-k8s.io/managed", "true"))
				}
			}
			g.Expect(gated).To(Equal(1), "the ReplicaSet's new Pod waits for Kueue")
		}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		// The CronJob controller makes a Job at the next minute.
		Eventually(func(g Gomega) {
			made := 0
			for name, suspended := range cronJobs(g) {
				if _, before := cronJobsBefore[name]; before {
					continue
				}
				made++
				g.Expect(suspended).To(BeTrue(), "Job %s, made by the CronJob controller while Kueue is away, is suspended", name)
				cronJobWhileAway = name
			}
			g.Expect(made).To(BeNumerically(">", 0))
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("creates a new queued Job suspended, even one that asks to run, and says why", func() {
		bobWarned.Take()
		Expect(bob.Create(ctx, queuedJob("while-away"))).To(Succeed())
		j := &batchv1.Job{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: "while-away"}, j)).To(Succeed())
		Expect(j.Spec.Suspend).To(HaveValue(BeTrue()))
		warned := bobWarned.Take()
		Expect(warned).To(ContainSubstring("Kueue is not serving"))
		AddReportEntry("the warning bob got", warned)

		By("an unqueued Job is not Kueue's, and is left alone")
		unqueued := queuedJob("unqueued")
		unqueued.Labels = nil
		Expect(bob.Create(ctx, unqueued)).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(unqueued), unqueued)).To(Succeed())
		Expect(unqueued.Spec.Suspend).To(HaveValue(BeFalse()))
	})

	It("creates a new queued Pod with Kueue's scheduling gate, marked as Kueue's", func() {
		Expect(bob.Create(ctx, queuedPod("gated"))).To(Succeed())
		p := &corev1.Pod{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: "gated"}, p)).To(Succeed())
		Expect(hasGate(p)).To(BeTrue())
		Expect(p.Labels).To(HaveKeyWithValue("kueue.x-k8s.io/managed", "true"))
	})

	It("does not gate a queued Pod where Kueue manages no pods: Kueue would never ungate it", func() {
		p := queuedPod("outside")
		p.Namespace = lab
		Expect(admin.Create(ctx, p)).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		Expect(hasGate(p)).To(BeFalse())
	})

	It("refuses a new queued Deployment, which cannot wait suspended", func() {
		labels := map[string]string{"app": "web", integrations.QueueNameLabel: queue}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "web", Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: queuedPod("x").Spec}}}
		err := bob.Create(ctx, d)
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("a Deployment cannot be created suspended"))
	})

	It("refuses to scale up a queued StatefulSet or LeaderWorkerSet, whose new pods only Kueue's webhook would gate, until Kueue is back", func() {
		for _, obj := range []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: servedDB}},
			leaderWorkerSetRef(servedLWS),
		} {
			err := scale(obj, 2)
			Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("[kueue_guard.kueue_absent]"))
			Expect(err.Error()).To(ContainSubstring("scale it up once Kueue is back"))
			AddReportEntry("kubectl scale "+obj.GetName(), err.Error())
		}
	})

	It("refuses to resume the Job, or to ungate the Pod, until Kueue is back", func() {
		j := &batchv1.Job{}
		Expect(bob.Get(ctx, client.ObjectKey{Namespace: team, Name: "while-away"}, j)).To(Succeed())
		j.Spec.Suspend = new(false)
		err := bob.Update(ctx, j)
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("cannot be resumed until Kueue is back"))
		AddReportEntry("resuming the Job", err.Error())

		p := &corev1.Pod{}
		Expect(bob.Get(ctx, client.ObjectKey{Namespace: team, Name: "gated"}, p)).To(Succeed())
		p.Spec.SchedulingGates = nil
		err = bob.Update(ctx, p)
		var se *apierrors.StatusError
		Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("cannot be resumed until Kueue is back"))
	})

	It("leaves them to Kueue once it is back: Kueue admits the Job and the Pod", func() {
		Expect(kq.Resume(ctx)).To(Succeed())
		Eventually(serving).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(1.0))
		Eventually(func(g Gomega) {
			j := &batchv1.Job{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: "while-away"}, j)).To(Succeed())
			g.Expect(j.Spec.Suspend).To(HaveValue(BeFalse()), "admitted and resumed by Kueue")
			p := &corev1.Pod{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: "gated"}, p)).To(Succeed())
			g.Expect(hasGate(p)).To(BeFalse(), "ungated by Kueue")
			g.Expect(admittedOwners(g)).To(ContainElements("Job/while-away", "Pod/gated", "Job/"+cronJobWhileAway))
			for _, p := range webPods(g) {
				g.Expect(hasGate(&p)).To(BeFalse(), "Pod %s ungated by Kueue", p.Name)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		Expect(scale(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: servedDB}}, 1)).To(Succeed(),
			"with Kueue back, it is Kueue's to admit its pod group")
		Expect(scale(leaderWorkerSetRef(servedLWS), 2)).To(Succeed(), "with Kueue back, it is Kueue's to admit the new group")
		Expect(admin.Delete(ctx, leaderWorkerSetRef(servedLWS))).To(Succeed())

		Expect(admin.Delete(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: nightly}})).To(Succeed())
		Expect(admin.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: servedDB}})).To(Succeed())
		Expect(admin.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: servedWeb}})).To(Succeed())
	})
})

const (
	servedDB  = "served-db"  // a queued StatefulSet, scaled to 0, made while Kueue serves
	servedLWS = "served-lws" // a queued LeaderWorkerSet of one group, made while Kueue serves
	servedWeb = "served-web" // a queued Deployment made while Kueue serves
	nightly   = "nightly"    // a queued CronJob made while Kueue serves
)

var (
	// cronJobsBefore are the CronJob's Jobs made before Kueue went away;
	// cronJobWhileAway one made while it was.
	cronJobsBefore   map[string]bool
	cronJobWhileAway string
)

func queuedDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name, integrations.QueueNameLabel: queue}
	spec := queuedPod("x").Spec
	spec.RestartPolicy = corev1.RestartPolicyAlways
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: new(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}

func queuedStatefulSet(name string) *appsv1.StatefulSet {
	d := queuedDeployment(name, 0)
	return &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), Selector: d.Spec.Selector, Template: d.Spec.Template}}
}

// scale is bob's `kubectl scale --replicas=N` of obj.
func scale(obj client.Object, n int32) error {
	body := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	return bob.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(body))
}

// queuedLeaderWorkerSet is one group of a leader and a worker, with the
// defaults LeaderWorkerSet's own webhook (not running here) would set.
func queuedLeaderWorkerSet(name string) *unstructured.Unstructured {
	return fixtures.LeaderWorkerSet(team, name).Queue(queue).Requests("cpu", "100m").
		Set(map[string]any{"type": "RollingUpdate", "rollingUpdateConfiguration": map[string]any{"maxUnavailable": int64(1), "maxSurge": int64(0)}},
			"spec", "rolloutStrategy").
		Set("LeaderCreated", "spec", "startupPolicy").
		Set("RecreateGroupOnPodRestart", "spec", "leaderWorkerTemplate", "restartPolicy").Obj()
}

func leaderWorkerSetRef(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("leaderworkerset.x-k8s.io/v1")
	u.SetKind("LeaderWorkerSet")
	u.SetNamespace(team)
	u.SetName(name)
	return u
}

// queuedCronJob makes a queued Job every minute, each asking to run.
func queuedCronJob(name string) *batchv1.CronJob {
	job := queuedJob("x")
	job.Spec.Suspend = nil
	return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: job.Labels}, Spec: job.Spec}}}
}

func webPods(g Gomega) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(admin.List(ctx, pods, client.InNamespace(team), client.MatchingLabels{"app": servedWeb})).To(Succeed())
	return pods.Items
}

// cronJobs are the Jobs the CronJob made, and whether each is suspended.
func cronJobs(g Gomega) map[string]bool {
	jobs := &batchv1.JobList{}
	g.Expect(admin.List(ctx, jobs, client.InNamespace(team))).To(Succeed())
	out := map[string]bool{}
	for _, j := range jobs.Items {
		if owner := metav1.GetControllerOf(&j); owner != nil && owner.Kind == "CronJob" && owner.Name == nightly {
			out[j.Name] = ptr.Deref(j.Spec.Suspend, false)
		}
	}
	return out
}
