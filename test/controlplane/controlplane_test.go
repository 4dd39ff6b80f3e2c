package controlplane

import (
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	queueLabel = "kueue.x-k8s.io/queue-name"
	// creatorMarker starts the message of the identity policies' denials.
	creatorMarker = "smoke-identity:"
	pauseImage    = "registry.k8s.io/pause:3.10"
)

var _ = Describe("kube-controller-manager", func() {
	It("creates a Deployment's ReplicaSet and pods, each controller under its own identity", func() {
		ns := newNamespace("deploy-")
		requireCreator(ns, "apps", "v1", "replicasets", testenv.ControllerUsername("deployment"),
			&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
				Template: podTemplate(map[string]string{"app": "probe"}, "")}})
		requireCreator(ns, "", "v1", "pods", testenv.ControllerUsername("replicaset"), probePod(ns))

		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate(map[string]string{"app": "web"}, ""),
		}}
		Expect(env.Client.Create(ctx, dep)).To(Succeed())

		var rs appsv1.ReplicaSet
		Eventually(func(g Gomega) {
			var list appsv1.ReplicaSetList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			rs = list.Items[0]
			g.Expect(metav1.IsControlledBy(&rs, dep)).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())

		Eventually(func(g Gomega) []corev1.Pod {
			pods := ownedPods(g, ns, &rs)
			// A denial by the identity policy shows on the ReplicaSet.
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&rs), &rs)).To(Succeed())
			for _, c := range rs.Status.Conditions {
				g.Expect(c.Message).NotTo(ContainSubstring(creatorMarker))
			}
			return pods
		}).WithTimeout(time.Minute).Should(HaveLen(2))

		for _, p := range ownedPods(Default, ns, &rs) {
			Expect(managers(p.ManagedFields)).To(ContainElement("kube-controller-manager"))
		}
		AddReportEntry("identities", fmt.Sprintf("ReplicaSet %s created by %s; its pods by %s",
			rs.Name, testenv.ControllerUsername("deployment"), testenv.ControllerUsername("replicaset")))
	})

	It("creates a Job's pods as the job controller", func() {
		ns := newNamespace("job-")
		requireCreator(ns, "", "v1", "pods", testenv.ControllerUsername("job"), probePod(ns))

		job := newJob(ns, "work", nil, 2)
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) []corev1.Pod {
			return ownedPods(g, ns, job)
		}).WithTimeout(time.Minute).Should(HaveLen(2))
	})

	It("runs RBAC with the built-in roles aggregated, so a namespace user bound to edit can create a Job", func() {
		ns := newNamespace("rbac-")
		user := impersonating("smoke-user")
		Expect(user.List(ctx, &corev1.PodList{}, client.InNamespace(ns))).To(Satisfy(apierrors.IsForbidden))

		Eventually(func(g Gomega) []rbacv1.PolicyRule {
			var edit rbacv1.ClusterRole
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "edit"}, &edit)).To(Succeed())
			return edit.Rules
		}).WithTimeout(time.Minute).ShouldNot(BeEmpty())

		Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smoke-user-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "smoke-user"}},
		})).To(Succeed())
		Eventually(func() error {
			return user.Create(ctx, newJob(ns, "by-user", nil, 1), client.DryRunAll)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(user.List(ctx, &corev1.PodList{})).To(Satisfy(apierrors.IsForbidden), "edit is bound in one namespace only")
	})
})

var _ = Describe("Kueue", func() {
	It("registers its webhook configurations as it ships them, pointed at its local server", func() {
		var mut admissionregistrationv1.MutatingWebhookConfiguration
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: testenv.KueueMutatingWebhookConfiguration}, &mut)).To(Succeed())
		names := map[string]admissionregistrationv1.MutatingWebhook{}
		for _, w := range mut.Webhooks {
			Expect(w.ClientConfig.Service).To(BeNil())
			Expect(*w.ClientConfig.URL).To(HavePrefix(fmt.Sprintf("https://127.0.0.1:%d/", kq.WebhookPort)))
			names[w.Name] = w
		}
		Expect(names).To(HaveKey("mjob.kb.io"))
		Expect(*names["mjob.kb.io"].FailurePolicy).To(Equal(admissionregistrationv1.Fail))
		Expect(names["mpod.kb.io"].NamespaceSelector.MatchExpressions).To(ContainElement(metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kueue-system"}}))
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: testenv.KueueValidatingWebhookConfiguration},
			&admissionregistrationv1.ValidatingWebhookConfiguration{})).To(Succeed())
	})

	It("suspends a queued Job at creation, admits its Workload and unsuspends it; the job controller creates its pods", func() {
		ns := newNamespace("kueue-")
		flavor := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "smoke-" + ns}}
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "smoke-" + ns}, Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
				Flavors: []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(flavor.Name),
					Resources: []kueue.ResourceQuota{{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("10")}}}},
			}},
		}}
		lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lq"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)}}
		for _, o := range []client.Object{flavor, cq, lq} {
			Expect(env.Client.Create(ctx, o)).To(Succeed())
			DeferCleanup(deleteObject, o)
		}
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cq), cq)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive)).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())

		requireCreator(ns, "", "v1", "pods", testenv.ControllerUsername("job"), probePod(ns))
		requireCreator(ns, kueue.SchemeGroupVersion.Group, kueue.SchemeGroupVersion.Version, "workloads", testenv.KueueUsername,
			&kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: kueue.WorkloadSpec{
				QueueName: "lq",
				PodSets:   []kueue.PodSet{{Name: "main", Count: 1, Template: podTemplate(nil, "1")}},
			}})
		requireUnsuspender(ns, testenv.KueueUsername)

		job := newJob(ns, "queued", map[string]string{queueLabel: "lq"}, 2)
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		Expect(job.Spec.Suspend).To(HaveValue(BeTrue()), "Kueue's webhook suspends a queued Job at creation")

		var wl kueue.Workload
		Eventually(func(g Gomega) {
			var list kueue.WorkloadList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			wl = list.Items[0]
			g.Expect(metav1.IsControlledBy(&wl, job)).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(wl.Status.Admission.ClusterQueue).To(BeEquivalentTo(cq.Name))

		Eventually(func(g Gomega) *bool {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			return job.Spec.Suspend
		}).WithTimeout(time.Minute).Should(HaveValue(BeFalse()))
		Eventually(func(g Gomega) []corev1.Pod {
			return ownedPods(g, ns, job)
		}).WithTimeout(time.Minute).Should(HaveLen(2))
		AddReportEntry("identities", fmt.Sprintf("Workload %s created and Job unsuspended by %s (field managers %v); pods by %s",
			wl.Name, testenv.KueueUsername, managers(job.ManagedFields), testenv.ControllerUsername("job")))
	})

	It("comes back after a restart and keeps serving its webhooks", func() {
		Expect(kq.Restart(ctx)).To(Succeed())
		ns := newNamespace("restart-")
		job := newJob(ns, "after-restart", map[string]string{queueLabel: "lq"}, 1)
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		Expect(job.Spec.Suspend).To(HaveValue(BeTrue()))
	})
})

// newNamespace creates a namespace, deleted after the spec (the namespace
// controller deletes what is in it).
func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "smoke-" + prefix}}
	Expect(env.Client.Create(ctx, ns)).To(Succeed())
	DeferCleanup(deleteObject, ns)
	return ns.Name
}

func deleteObject(o client.Object) {
	Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o))).To(Succeed())
}

// requireCreator makes the API server itself deny every CREATE of the resource in
// the namespace by anyone but username (a ValidatingAdmissionPolicy, so no audit
// log or webhook is needed), with the requester in the message, and waits until
// the policy denies a dry-run create of probe by the test's admin. An object that
// then exists was created by username.
func requireCreator(ns, group, version, res, username string, probe client.Object) {
	requireIdentity(ns, res, username, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{res}},
	}, fmt.Sprintf("request.userInfo.username == %q", username))
	Eventually(func() error {
		return env.Client.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring(creatorMarker)), "the identity policy for %s is active", res)
}

// requireUnsuspender lets only username unsuspend a Job in the namespace, and waits
// until the policy denies a dry-run unsuspend by the test's admin.
func requireUnsuspender(ns, username string) {
	requireIdentity(ns, "jobs-unsuspend", username, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
	}, fmt.Sprintf("!(has(oldObject.spec.suspend) && oldObject.spec.suspend) || (has(object.spec.suspend) && object.spec.suspend) || request.userInfo.username == %q", username))
	probe := newJob(ns, "unsuspend-probe", nil, 1)
	probe.Spec.Suspend = new(true)
	Expect(env.Client.Create(ctx, probe)).To(Succeed())
	DeferCleanup(deleteObject, probe)
	Eventually(func() error {
		p := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(probe), p); err != nil {
			return err
		}
		p.Spec.Suspend = new(false)
		return env.Client.Update(ctx, p, client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring(creatorMarker)), "the unsuspend policy is active")
}

func requireIdentity(ns, what, username string, rule admissionregistrationv1.RuleWithOperations, expression string) {
	name := "smoke-" + ns + "-" + what
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: expression,
				MessageExpression: fmt.Sprintf("%q + ' ' + request.operation + ' by ' + request.userInfo.username + ', want %s'",
					creatorMarker, username),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		Expect(env.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(deleteObject, o)
	}
}

func probePod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: podTemplate(nil, "").Spec}
}

// podTemplate is a pause container, requesting cpu when given; with labels it is a
// ReplicaSet's (restartPolicy Always), without a Job's (Never).
func podTemplate(labels map[string]string, cpu string) corev1.PodTemplateSpec {
	c := corev1.Container{Name: "main", Image: pauseImage}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	restart := corev1.RestartPolicyNever
	if labels != nil {
		restart = corev1.RestartPolicyAlways
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: restart, Containers: []corev1.Container{c}}}
}

// newJob is a Job of n pods requesting 1 cpu each.
func newJob(ns, name string, labels map[string]string, n int32) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: batchv1.JobSpec{
		Parallelism: new(n), Completions: new(n), Template: podTemplate(nil, "1"),
	}}
}

// ownedPods are the namespace's pods the owner controls.
func ownedPods(g Gomega, ns string, owner metav1.Object) []corev1.Pod {
	var list corev1.PodList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, owner) {
			out = append(out, p)
		}
	}
	return out
}

func managers(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.Manager)
	}
	return out
}

// impersonating is a client acting as the user (envtest's admin may impersonate).
func impersonating(user string) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}
