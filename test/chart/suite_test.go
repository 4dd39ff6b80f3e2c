// Package charttest registers the Helm chart's own webhook configurations on a
// real API server (kube-apiserver and etcd from `make testbin`), pointed at
// kueue-guard's real server running in the test process, and proves that the
// selectors users install decide which requests reach the webhooks.
package charttest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestChart(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Chart on a real API server Suite")
}

// Namespaces the suite's values single out.
const (
	// optOutLabel is a namespace label that the suite's values exclude from the
	// workload webhooks with an extra namespaceSelector term. The server knows
	// nothing about it: a namespace with it is left alone only because the
	// chart's selector keeps its requests away from the server.
	optOutLabel = "chart-test.kueue-guard.io/opt-out"
	// exemptNamespace is in config.exemptNamespaces, which the chart also
	// leaves out of the workload webhooks' selector.
	exemptNamespace = "chart-exempt"
)

// suiteValues are the chart values the suite installs: the defaults plus one
// extra selector term and one exempt namespace, and a webhook timeout that
// leaves room for the race detector on a small machine.
const suiteValues = `
webhooks:
  timeoutSeconds: 15
  mutateWorkloads:
    namespaceSelector:
      matchExpressions:
      - {key: ` + optOutLabel + `, operator: DoesNotExist}
  validateWorkloads:
    namespaceSelector:
      matchExpressions:
      - {key: ` + optOutLabel + `, operator: DoesNotExist}
config:
  exemptNamespaces: [` + exemptNamespace + `]
  # No Kueue manager runs here (test/lifecycle plays kueueAbsent).
  kueueAbsent: allow
`

var (
	ctx       context.Context
	cancel    context.CancelFunc
	env       *testenv.Env
	k8sClient client.Client
	srv       *testenv.Server
)

func chartValues() map[string]any {
	v := map[string]any{}
	Expect(yaml.Unmarshal([]byte(suiteValues), &v)).To(Succeed())
	return v
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	mutating, validating, err := testenv.ChartWebhooks(chartValues())
	Expect(err).NotTo(HaveOccurred())
	// Without the OpenReports CRDs: the suite installs the chart's own.
	env, err = testenv.StartWithout([]string{"openreports.io"}, mutating, validating)
	Expect(err).NotTo(HaveOccurred())
	k8sClient = env.Client

	// The server runs with the configuration and policies the chart renders.
	cfg, err := testenv.ChartConfiguration(chartValues(), GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	srv, err = env.StartServer(ctx, env.Config, cfg)
	Expect(err).NotTo(HaveOccurred())

	// The system namespaces exist once the API server's bootstrap controller ran.
	Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}})
	}).Should(Succeed())
})

var _ = AfterSuite(func() {
	if srv != nil {
		Expect(srv.Stop()).To(Succeed())
	}
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
