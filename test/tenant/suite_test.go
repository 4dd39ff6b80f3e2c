// Package tenant plays the adversary kueue-guard is judged by: a namespace user
// with only the built-in `edit` role in their own namespace, who writes any YAML
// that role allows. It runs on the real control plane — kube-apiserver, etcd, the
// real kube-controller-manager (each controller under its own identity) and the
// real Kueue manager with its own webhooks — so owner references, identities and
// Kueue's suspension are the real ones.
package tenant

import (
	"context"
	"os"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestTenant(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Tenant Suite")
}

const (
	team   = "team-a" // the tenant's namespace: default queue, 4-GPU cap
	tenant = "alice"  // edit rights in team-a only
	queue  = "lq"     // admits: 10 CPUs, 8 GPUs
	heldLQ = "held"   // a LocalQueue whose ClusterQueue is on hold: workloads stay queued
	// lateTeam gets a default queue only after the tenant created workloads in it.
	lateTeam = "team-late"
	// strictTeam is selected by defaulting.unqueued (deny) and has no default queue.
	strictTeam  = "team-strict"
	strictLabel = "kueue-guard.io/queued-only"
	gpu         = "nvidia.com/gpu"
	// gpuClass is the DRA device class Kueue's deviceClassMappings charge as gpu.
	gpuClass = "gpu.nvidia.com"
	draQueue = "dra"
	gpuLimit = "4"
)

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
	kq     *testenv.Kueue
	srv    *testenv.Server
	admin  client.Client
	alice  client.Client
	cfg    *config.Configuration
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	policyDir, err := os.MkdirTemp("", "kueue-guard-tenant-policies-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, policyDir)
	_, err = testenv.CopyShippedPolicies(policyDir)
	Expect(err).NotTo(HaveOccurred())

	cfg = config.Default()
	cfg.Policies.Directory = policyDir
	cfg.Defaulting.Unqueued = config.Unqueued{Action: config.UnqueuedDeny,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{strictLabel: "true"}}}
	Expect(cfg.Validate()).To(BeEmpty())

	opts := testenv.WebhookOptions()
	opts.TrustedRequester = trust.New(cfg.Trust.Controllers).CEL()
	env, err = testenv.Start([]*admissionregistrationv1.MutatingWebhookConfiguration{webhookconfig.Mutating(opts)},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{webhookconfig.Validating(opts)})
	Expect(err).NotTo(HaveOccurred())
	admin = env.Client

	_, err = env.StartKubeControllerManager(ctx)
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
	// kueue-guard first: its validating webhook fails closed, and Kueue's
	// start-up check creates a Job through it.
	srv, err = env.StartServer(ctx, env.Config, cfg)
	Expect(err).NotTo(HaveOccurred())
	// Kueue charges GPUs claimed through DRA's gpu.nvidia.com class as nvidia.com/gpu.
	// Kueue manages RayJobs and RayClusters too: KubeRay runs here.
	kq, err = env.StartKueue(ctx, testenv.KueueOptions{
		Frameworks: append(slices.Clone(testenv.DefaultKueueFrameworks), "ray.io/rayjob", "ray.io/raycluster"),
		Resources: &kueueconfig.Resources{
			DeviceClassMappings: []kueueconfig.DeviceClassMapping{{Name: gpu, DeviceClassNames: []corev1.ResourceName{gpuClass}}}}})
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
	// The frameworks' own operators, under the identities kueue-guard trusts by default.
	for _, start := range []func(context.Context) (*testenv.Operator, error){env.StartJobSet, env.StartKubeRay} {
		op, err := start(ctx)
		Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
		Expect(cfg.Trust.Controllers).To(ContainElement(op.Username))
	}
	Expect(kq.Username).To(Equal(config.KueueServiceAccount(config.DefaultKueueNamespace)),
		"Kueue acts under the identity kueue-guard trusts by default")

	// The chart's CEL twin of the pod deletion rule, which the API server
	// evaluates itself.
	vaps, err := testenv.ChartAdmissionPolicies(nil, admission.RulePodDeletionGrace)
	Expect(err).NotTo(HaveOccurred())
	for _, o := range vaps {
		Expect(admin.Create(ctx, o)).To(Succeed())
	}

	setUpQueues()
	alice = impersonating(tenant)
	if d, err := env.LogDir(); err == nil {
		GinkgoWriter.Println("control plane logs in", d)
	}
})

var _ = ReportAfterEach(func(r SpecReport) { testenv.ReportFailure(env, r) })

var _ = AfterSuite(func() {
	if srv != nil {
		Expect(srv.Stop()).To(Succeed())
	}
	if kq != nil {
		Expect(kq.Stop()).To(Succeed())
	}
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// tenantNamespace creates a namespace in which alice has the built-in edit role,
// plus JobSets and RayJobs (which the frameworks' installs grant editors; this
// control plane has no such aggregated ClusterRoles).
func tenantNamespace(name string, labels, annotations map[string]string) {
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: labels, Annotations: annotations}})).To(Succeed())
	bind := func(binding, kind, role string) {
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: binding},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}}})).To(Succeed())
	}
	bind("alice-edit", "ClusterRole", "edit")
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "frameworks-edit"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets"}, Verbs: verbs},
			{APIGroups: []string{"ray.io"}, Resources: []string{"rayjobs"}, Verbs: verbs}}})).To(Succeed())
	bind("alice-frameworks", "Role", "frameworks-edit")
}

// setUpQueues creates the tenant's namespaces and the queues: lq admits, held
// never does.
func setUpQueues() {
	tenantNamespace(team, map[string]string{"kueue-guard.io/max-gpus": gpuLimit},
		map[string]string{admission.DefaultQueueAnnotation: queue})
	tenantNamespace(lateTeam, nil, nil)
	tenantNamespace(strictTeam, map[string]string{strictLabel: "true"}, nil)

	Expect(admin.Create(ctx, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}})).To(Succeed())
	quota := func(name string, hold bool) *kueue.ClusterQueue {
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, gpu},
				Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("10")},
					{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("64Gi")},
					{Name: gpu, NominalQuota: resource.MustParse("8")},
				}}},
			}},
		}}
		if hold {
			p := kueue.Hold
			cq.Spec.StopPolicy = &p
		}
		return cq
	}
	Expect(admin.Create(ctx, quota("cq", false))).To(Succeed())
	Expect(admin.Create(ctx, quota("held-cq", true))).To(Succeed())
	// The DRA spec's own quota, which no other spec's running Jobs hold.
	Expect(admin.Create(ctx, quota("dra-cq", false))).To(Succeed())
	Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: draQueue},
		Spec: kueue.LocalQueueSpec{ClusterQueue: "dra-cq"}})).To(Succeed())
	Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: queue},
		Spec: kueue.LocalQueueSpec{ClusterQueue: "cq"}})).To(Succeed())
	Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: heldLQ},
		Spec: kueue.LocalQueueSpec{ClusterQueue: "held-cq"}})).To(Succeed())
	Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: lateTeam, Name: queue},
		Spec: kueue.LocalQueueSpec{ClusterQueue: "held-cq"}})).To(Succeed())
	// The server admits from its cache: wait until it has the queues.
	Eventually(func() error {
		lq := &kueue.LocalQueue{}
		return admin.Get(ctx, client.ObjectKey{Namespace: team, Name: heldLQ}, lq)
	}).Should(Succeed())
}

// impersonating is a client that acts as user, authorized by RBAC like any
// namespace user.
func impersonating(user string) client.Client {
	c := rest.CopyConfig(env.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return cl
}
