package lifecycle

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// defaultTeam relies on Kueue's own default LocalQueue, "default".
const defaultTeam = "uses-kueue-default"

var localQueueCRD = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// Uninstalling Kueue deletes its CRDs and every LocalQueue with them. A
// namespace that relied on Kueue's "default" LocalQueue is still owed a
// queue meanwhile: bob's unqueued Job there must wait for Kueue, not run.
var _ = Describe("while Kueue is uninstalled", Ordered, func() {
	var savedCRD *unstructured.Unstructured
	var savedQueues []kueue.LocalQueue

	unqueuedJob := func(name string) *batchv1.Job {
		j := queuedJob(name)
		j.Namespace, j.Labels = defaultTeam, nil
		return j
	}

	BeforeAll(func() {
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: defaultTeam}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: defaultTeam, Name: "bob-edit"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})).To(Succeed())
		Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: defaultTeam, Name: "default"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: cq}})).To(Succeed())
		// kueue-guard's cache has it once a dry run is defaulted to it.
		Eventually(func(g Gomega) {
			j := unqueuedJob("probe")
			g.Expect(bob.Create(ctx, j, client.DryRunAll)).To(Succeed())
			g.Expect(j.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, "default"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("loses Kueue's manager and its LocalQueue API", func() {
		list := &kueue.LocalQueueList{}
		Expect(admin.List(ctx, list)).To(Succeed())
		savedQueues = list.Items
		savedCRD = &unstructured.Unstructured{}
		savedCRD.SetGroupVersionKind(localQueueCRD)
		Expect(admin.Get(ctx, client.ObjectKey{Name: "localqueues.kueue.x-k8s.io"}, savedCRD)).To(Succeed())

		Expect(kq.Stop()).To(Succeed())
		Expect(admin.Delete(ctx, savedCRD.DeepCopy())).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Name: savedCRD.GetName()}, savedCRD.DeepCopy()))
		}).WithTimeout(time.Minute).Should(BeTrue())
		// kueue-guard no longer knows any queue.
		Eventually(func() string {
			j := unqueuedJob("probe")
			j.Labels = map[string]string{integrations.QueueNameLabel: "any"}
			_ = bob.Create(ctx, j, client.DryRunAll)
			return bobWarned.Take()
		}).WithTimeout(30 * time.Second).Should(ContainSubstring("cannot read Kueue's queues"))
	})

	It("still queues an unqueued Job where Kueue's default LocalQueue was, and holds it for Kueue", func() {
		j := unqueuedJob("after-uninstall")
		Expect(bob.Create(ctx, j)).To(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
		Expect(j.Labels).To(HaveKeyWithValue(integrations.QueueNameLabel, "default"))
		Expect(j.Annotations).To(HaveKeyWithValue(admission.DefaultedByAnnotation, admission.SourceKueueDefault))
		Expect(ptr.Deref(j.Spec.Suspend, false)).To(BeTrue(), "held until Kueue is back to admit it")
	})

	It("leaves it to Kueue once reinstalled: Kueue admits it from its default LocalQueue", func() {
		crd := savedCRD.DeepCopy()
		unstructured.RemoveNestedField(crd.Object, "status")
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "generation", "finalizers"} {
			unstructured.RemoveNestedField(crd.Object, "metadata", f)
		}
		Expect(admin.Create(ctx, crd)).To(Succeed())
		Eventually(func() error {
			return admin.List(ctx, &kueue.LocalQueueList{})
		}).WithTimeout(time.Minute).Should(Succeed())
		for _, q := range savedQueues {
			q.ObjectMeta = metav1.ObjectMeta{Namespace: q.Namespace, Name: q.Name, Labels: q.Labels, Annotations: q.Annotations}
			q.Status = kueue.LocalQueueStatus{}
			Expect(client.IgnoreAlreadyExists(admin.Create(ctx, &q))).To(Succeed())
		}
		Expect(kq.Resume(ctx)).To(Succeed())
		Eventually(serving).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Equal(1.0))
		Eventually(func(g Gomega) {
			j := &batchv1.Job{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: defaultTeam, Name: "after-uninstall"}, j)).To(Succeed())
			g.Expect(j.Spec.Suspend).To(HaveValue(BeFalse()), "admitted and resumed by Kueue")
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})
