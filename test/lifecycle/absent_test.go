package lifecycle

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/testenv"
)

func requests() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}
}

// queuedJob is a Job in the team's queue that asks to run at once.
func queuedJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name, Labels: map[string]string{integrations.QueueNameLabel: queue}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(false), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
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
	})

	It("is marked once Kueue's manager stops and its webhooks are removed", func() {
		Expect(kq.Stop()).To(Succeed())
		Eventually(serving).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(BeZero())
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

	It("refuses a new queued Deployment, which cannot wait suspended", func() {
		labels := map[string]string{"app": "web", integrations.QueueNameLabel: queue}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "web", Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: queuedPod("x").Spec}}}
		err := bob.Create(ctx, d)
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("a Deployment cannot be created suspended"))
	})

	It("refuses to resume the Job, or to ungate the Pod, until Kueue is back", func() {
		j := &batchv1.Job{}
		Expect(bob.Get(ctx, client.ObjectKey{Namespace: team, Name: "while-away"}, j)).To(Succeed())
		j.Spec.Suspend = ptr.To(false)
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
			g.Expect(admittedOwners(g)).To(ContainElements("Job/while-away", "Pod/gated"))
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})
