// Package faults proves what holds when something goes wrong around
// kueue-guard — a rollout's SIGTERM first — on the real control plane, with the
// numbers docs/reliability.md reports: what was tried, what held, requests sent
// and failed.
package faults

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Faults Suite")
}

// lateGroups are the API groups whose CRDs the cluster does not have at first.
var lateGroups = []string{"kueue.x-k8s.io", "leaderworkerset.x-k8s.io"}

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
)

// One control plane for the suite; each spec starts its own server, since the
// faults stop it.
var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	// The chart's webhook configurations, pointed at the local serving port:
	// some faults are seen through the API server, as a cluster sees them.
	// The API server waits 10s (the chart's largest sensible timeout) so that
	// its retries of a refused call fit in it.
	mutating, validating, err := testenv.ChartWebhooks(map[string]any{"webhooks": map[string]any{"timeoutSeconds": 10}})
	Expect(err).NotTo(HaveOccurred())
	// Kueue and LeaderWorkerSet are not installed: the CRD spec installs them
	// while a server runs; the other specs do not need them.
	// The API server presents a client certificate to webhooks, as a cluster
	// whose admin set --client-ca-file would configure it; a server without
	// the flag does not ask for it.
	env, err = testenv.StartWith(testenv.StartOptions{WithoutGroups: lateGroups, WebhookClientCert: true}, mutating, validating)
	Expect(err).NotTo(HaveOccurred())
	// The servers pace the collector as serve does by default: the bursts,
	// floods and overloads here load the server as it ships.
	env.GCHeadroom = server.DefaultGCHeadroom
	_, stderr, err := env.Kubectl(nil, "create", "namespace", testenv.ServerNamespace)
	Expect(err).NotTo(HaveOccurred(), stderr)
})

var _ = ReportAfterEach(func(r SpecReport) { testenv.ReportFailure(env, r) })

var _ = AfterSuite(func() {
	cancel()
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// shippedPolicyServer starts a server with the shipped policies in a watched
// directory of its own (returned), stopped when the spec ends.
func shippedPolicyServer(profile config.InstallProfile) (*testenv.Server, string) {
	GinkgoHelper()
	cfg := testenv.ConfigWithoutKueue()
	cfg.InstallProfile = profile
	cfg.Policies.Directory = GinkgoT().TempDir()
	_, err := testenv.CopyShippedPolicies(cfg.Policies.Directory)
	Expect(err).NotTo(HaveOccurred())
	srv, err := env.StartServer(ctx, env.Config, cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Stop)
	return srv, cfg.Policies.Directory
}

// warnedClient is a client whose admission warnings are recorded, and a new
// namespace (named from prefix) for a spec's objects.
func warnedClient(prefix string) (client.Client, *testenv.Warnings, string) {
	GinkgoHelper()
	warned := &testenv.Warnings{}
	restCfg := rest.CopyConfig(env.Config)
	restCfg.WarningHandler = warned
	c, err := client.New(restCfg, client.Options{Scheme: env.Client.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	Expect(env.Client.Create(ctx, n)).To(Succeed())
	return c, warned, n.Name
}
