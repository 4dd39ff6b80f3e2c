package tenant

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Capacity that hides from the count: what a tenant asks for must be what the
// shipped policies judge, however it is asked.
var _ = Describe("capacity asked for another way", func() {
	It("a sidecar or init container without requests is refused, as is a request of zero", func() {
		withSidecar := job(1, 0)
		always := corev1.ContainerRestartPolicyAlways
		withSidecar.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox", RestartPolicy: &always}}
		denied(alice.Create(ctx, withSidecar), "kueue_guard.require_resource_requests")

		withInit := job(1, 0)
		withInit.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
		denied(alice.Create(ctx, withInit), "kueue_guard.require_resource_requests")

		zero := job(1, 0)
		zero.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0")
		zero.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("0")
		denied(alice.Create(ctx, zero), "kueue_guard.require_resource_requests")

		fine := job(1, 0)
		fine.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox", RestartPolicy: &always,
			Resources: fine.Spec.Template.Spec.Containers[0].Resources}}
		Expect(alice.Create(ctx, fine)).To(Succeed())
	})

	It("a reserved priority class is refused whether named by Kueue's label or by the pods' priorityClassName", func() {
		// The shipped data reserves "critical" for ml-platform-admins.
		byPods := job(1, 0)
		byPods.Spec.Template.Spec.PriorityClassName = "critical"
		denied(alice.Create(ctx, byPods), "kueue_guard.priority_class_allowed")

		byLabel := job(1, 0)
		byLabel.Labels["kueue.x-k8s.io/priority-class"] = "critical"
		denied(alice.Create(ctx, byLabel), "kueue_guard.priority_class_allowed")

		// An MPIJob's scheduling policy names the class Kueue's adapter
		// picks first, over its templates'.
		Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "mpijobs-edit"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"kubeflow.org"}, Resources: []string{"mpijobs"},
				Verbs: []string{"create"}}}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "alice-mpijobs"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "mpijobs-edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}}})).To(Succeed())
		mpi := fixtures.MPIJob(team, name("mpi")).Requests("cpu", "100m").Requests("memory", "64Mi").
			Set("critical", "spec", "runPolicy", "schedulingPolicy", "priorityClass").Obj()
		denied(alice.Create(ctx, mpi), "kueue_guard.priority_class_allowed")
	})
})
