// Package interop checks kueue-guard's workload summary — what every policy reads
// as input.workload — against the Workload the real Kueue manager creates for the
// same object, kind by kind, on the real control plane. It writes (with
// KUEUE_COMPAT_UPDATE=1) and otherwise checks docs/kueue-compat.md.
package interop

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestInterop(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue interop Suite")
}

const (
	namespace    = "interop"
	localQueue   = "lq"
	clusterQueue = "cq"
	// runtimeClass has a pod overhead Kueue adds to every pod that names it.
	runtimeClass = "with-overhead"
	// limitedNamespace has a LimitRange with container defaults.
	limitedNamespace = "interop-limited"
)

// frameworks are every Kueue integration whose CRD the control plane installs
// and that this suite compares.
var frameworks = []string{
	"batch/job", "pod", "deployment", "statefulset", "jobset.x-k8s.io/jobset", "ray.io/rayjob", "ray.io/raycluster",
	"kubeflow.org/mpijob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
	"kubeflow.org/paddlejob", "kubeflow.org/jaxjob", "workload.codeflare.dev/appwrapper", "ray.io/rayservice",
	"sparkoperator.k8s.io/sparkapplication", "trainer.kubeflow.org/trainjob", "leaderworkerset.x-k8s.io/leaderworkerset",
}

// trainingRuntimes are Kubeflow Trainer's own ClusterTrainingRuntimes (from its
// module's manifests) the TrainJobs name: a torch runtime with one trainer
// replicated job, and an MPI one whose launcher also runs as a node.
var trainingRuntimes = []string{"torch_distributed.yaml", "deepspeed_distributed.yaml"}

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
	admin  client.Client
	// indexed reads LimitRanges through an informer cache with Kueue's own
	// field index, as Kueue's manager does, so Kueue's AdjustResources runs
	// unchanged in the test.
	indexed client.Client
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(nil, nil)
	Expect(err).NotTo(HaveOccurred())
	admin = env.Client
	// The real controllers create a Deployment's and a StatefulSet's pods, which
	// Kueue admits.
	_, err = env.StartKubeControllerManager(ctx)
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
	_, err = env.StartKueue(ctx, testenv.KueueOptions{Frameworks: frameworks, ClusterAdmin: true,
		// Kueue v0.17 ships the SparkApplication integration as alpha.
		FeatureGates: map[string]bool{"SparkApplicationIntegration": true,
			// Kueue then gives a pending Workload its granular reason (WaitingForQuota,
			// ExceedsMaxQuota, NoMatchingFlavor), which the simulation specs compare.
			"UnadmittedWorkloadsObservability": true}})
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())

	c, err := cache.New(env.Config, cache.Options{Scheme: admin.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	Expect(indexer.Setup(ctx, c)).To(Succeed())
	go func() { _ = c.Start(ctx) }()
	Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
	indexed, err = client.New(env.Config, client.Options{Scheme: admin.Scheme(), Cache: &client.CacheOptions{Reader: c}})
	Expect(err).NotTo(HaveOccurred())

	setUpQueues()
})

var _ = ReportAfterEach(func(r SpecReport) { testenv.ReportFailure(env, r) })

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// setUpQueues makes a held ClusterQueue (Kueue creates Workloads, admits none)
// and a LocalQueue in each namespace, a LimitRange in the limited one, and a
// RuntimeClass with overhead.
func setUpQueues() {
	q := resource.MustParse
	Expect(admin.Create(ctx, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}})).To(Succeed())
	Expect(admin.Create(ctx, &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: clusterQueue},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			StopPolicy:        new(kueue.Hold),
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"},
				Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{
					{Name: "cpu", NominalQuota: q("100")}, {Name: "memory", NominalQuota: q("100Gi")},
					{Name: "nvidia.com/gpu", NominalQuota: q("16")}}}},
			}},
		}})).To(Succeed())
	for _, ns := range []string{namespace, limitedNamespace} {
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: localQueue},
			Spec: kueue.LocalQueueSpec{ClusterQueue: clusterQueue}})).To(Succeed())
	}
	Expect(admin.Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: limitedNamespace, Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{"cpu": q("750m"), "memory": q("256Mi")},
			Default:        corev1.ResourceList{"cpu": q("1"), "memory": q("512Mi")}}}}})).To(Succeed())
	Expect(admin.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: runtimeClass}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{"cpu": q("250m"), "memory": q("120Mi")}}})).To(Succeed())
	dir, err := testenv.ModuleDir("github.com/kubeflow/trainer/v2")
	Expect(err).NotTo(HaveOccurred())
	for _, f := range trainingRuntimes {
		data, err := os.ReadFile(filepath.Join(dir, "manifests", "base", "runtimes", f))
		Expect(err).NotTo(HaveOccurred())
		rt := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(data, &rt.Object)).To(Succeed())
		Expect(admin.Create(ctx, rt)).To(Succeed(), f)
	}
	// The indexed cache must see the LimitRange before Kueue's arithmetic is
	// computed from it.
	Eventually(func(g Gomega) {
		list := &corev1.LimitRangeList{}
		g.Expect(indexed.List(ctx, list, client.InNamespace(limitedNamespace))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
	}).Should(Succeed())
}
