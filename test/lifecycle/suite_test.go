// Package lifecycle plays Kueue's lifecycle on a real control plane with the
// real Kueue manager and kube-controller-manager: Kueue stopped and its
// webhooks removed (an uninstall, a reinstall), while a namespace user keeps
// creating and editing queued workloads, then Kueue back.
package lifecycle

import (
	"context"
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
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestLifecycle(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue lifecycle Suite")
}

const (
	team  = "lifecycle"    // the tenant's namespace
	lab   = "lab"          // a namespace whose pods Kueue does not manage
	user  = "bob"          // edit rights in team only: writes any YAML that allows
	queue = "lq"           // a LocalQueue with room for every workload here
	cq    = "lifecycle-cq" // its ClusterQueue
)

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
	kq     *testenv.Kueue
	srv    *testenv.Server
	admin  client.Client
	bob    client.Client
	// bobWarned holds the admission warnings bob's requests got.
	bobWarned = &testenv.Warnings{}
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	// The shipped policies judge every workload here, as in a real install.
	policyDir := GinkgoT().TempDir()
	_, err := testenv.CopyShippedPolicies(policyDir)
	Expect(err).NotTo(HaveOccurred())
	cfg := config.Default()
	cfg.InstallProfile = config.ProfileOSS
	cfg.Policies.Directory = policyDir
	Expect(cfg.Validate()).To(BeEmpty())
	Expect(cfg.KueueAbsent).To(Equal(config.KueueAbsentSuspend), "the default")

	opts := testenv.WebhookOptions()
	opts.TrustedRequester = trust.New(cfg.Trust.Controllers).CEL()
	env, err = testenv.Start([]*admissionregistrationv1.MutatingWebhookConfiguration{webhookconfig.Mutating(opts)},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{webhookconfig.Validating(opts)})
	Expect(err).NotTo(HaveOccurred())
	admin = env.Client
	// The Job controller runs what Kueue admits.
	_, err = env.StartKubeControllerManager(ctx)
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
	srv, err = env.StartServer(ctx, env.Config, cfg)
	Expect(err).NotTo(HaveOccurred())
	kq, err = env.StartKueue(ctx, testenv.KueueOptions{Frameworks: []string{"batch/job", "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset",
		// Kinds the managed install does not support, managed by this OSS install (preflight).
		"kubeflow.org/pytorchjob", "workload.codeflare.dev/appwrapper"},
		// Kueue leaves pod-based workloads alone in the lab namespace.
		ManagedJobsNamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", testenv.KueueNamespace, lab}}}}})
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())

	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}})).To(Succeed())
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: lab}})).To(Succeed())
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.ServerNamespace}})).To(Succeed())
	Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "bob-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})).To(Succeed())
	Expect(admin.Create(ctx, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}})).To(Succeed())
	Expect(admin.Create(ctx, &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: cq}, Spec: kueue.ClusterQueueSpec{
		NamespaceSelector: &metav1.LabelSelector{},
		ResourceGroups: []kueue.ResourceGroup{{
			CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
			Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{
				{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("10")},
				{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("64Gi")},
			}}},
		}},
	}})).To(Succeed())
	Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: queue},
		Spec: kueue.LocalQueueSpec{ClusterQueue: cq}})).To(Succeed())

	// And LeaderWorkerSets, which edit does not cover (their CRD ships no
	// aggregated roles).
	Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "bob-lws"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"leaderworkerset.x-k8s.io"}, Resources: []string{"leaderworkersets", "leaderworkersets/scale"},
			Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}})).To(Succeed())
	Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "bob-lws"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "bob-lws"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})).To(Succeed())

	c := rest.CopyConfig(env.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c.WarningHandler = bobWarned
	bob, err = client.New(c, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
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
