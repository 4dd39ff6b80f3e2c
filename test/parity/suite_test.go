// Package parity proves that the CEL twins of the workload guards, which the
// API server evaluates itself (the chart's apiServerRules), decide as the
// webhook does: one corpus of requests — every catalog kind, a tenant's owner
// references and resumes, trusted controllers' requests, updates — is sent once
// with only kueue-guard's webhooks registered and once with only the chart's
// generated ValidatingAdmissionPolicies, on the real API server, and the
// decisions are compared rule by rule.
package parity

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestParity(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Parity Suite")
}

const (
	ns = "parity"
	// tenantUser writes anything (cluster-admin): only trust decides.
	tenantUser = "mallory"
	// trustedSA is kube-controller-manager's Job controller, trusted by default.
	trustedSA = "job-controller"
)

var (
	ctx     context.Context
	cancel  context.CancelFunc
	env     *testenv.Env
	srv     *testenv.Server
	kq      *testenv.Kueue
	admin   client.Client
	tenant  client.Client
	trusted client.Client
	// webhook and apiServer are the corpus's decisions with only the webhooks,
	// and with only the generated policies.
	webhook, apiServer []decision
	corpus             []request
	// guardConfig is kueue-guard's configuration, rendered from values.
	guardConfig *config.Configuration
	// apiServerDenies are the corpus's decisions with the policies bound as the chart binds them.
	apiServerDenies []decision
	// warnings are the API server's warnings to the tenant and the trusted identity.
	warnings = &warningRecorder{}
	// both are the decisions with the webhooks and the policies, as in production.
	both []decision
	// The same for defaulting's corpus.
	defaultingWebhook, defaultingAPIServer, defaultingBoth []decision
	defaultingCorpus                                       []request
	// The backstop's creates, with the validating webhook alone and with the
	// validating twins alone: what arrives when nothing labelled it.
	backstopWebhook, backstopAPIServer []decision
	backstopCorpus                     []request
	// values are the chart's, but for kinds the managed install does not
	// integrate: warned, not denied, so that the corpus can hold every kind.
	values = map[string]any{"config": map[string]any{"integrations": map[string]any{"action": "warn"}}}
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	mutating, validating, err := testenv.ChartWebhooks(values)
	Expect(err).NotTo(HaveOccurred())
	env, err = testenv.Start(mutating, validating)
	Expect(err).NotTo(HaveOccurred())
	admin = env.Client
	guardConfig, err = testenv.ChartConfiguration(values, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	srv, err = env.StartServer(ctx, env.Config, guardConfig)
	Expect(err).NotTo(HaveOccurred())
	// Kueue serving, so that the webhook judges as it does in production (with
	// Kueue away another rule, kueue_absent, judges resumes).
	kq, err = env.StartKueue(ctx, testenv.KueueOptions{Frameworks: kueueFrameworks(),
		FeatureGates: map[string]bool{"SparkApplicationIntegration": true}})
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
	withoutKueueValidation()

	tenant = impersonating(rest.ImpersonationConfig{UserName: tenantUser})
	trusted = impersonating(rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:" + trustedSA,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}})
	grantEverything()
	corpus = buildCorpus()
	defaultingCorpus = defaulting()
	backstopCorpus = backstopCreates()

	By("the webhook alone")
	webhook = decideAll(corpus)
	defaultingWebhook = decideAll(defaultingCorpus)

	By("the validating webhook alone (the mutating webhook down)")
	removeWebhooks(mutating[0].Name)
	Eventually(func() map[string]bool { return decide(backstopCorpus[0]).rules }, 30*time.Second).
		Should(HaveKey(admission.RuleDefaultingBackstop), "the mutating webhook is gone")
	backstopWebhook = decideAll(backstopCorpus)

	By("the API server's generated policies alone")
	removeWebhooks(validating[0].Name)
	Eventually(func() string { return decide(probe()).answer }, 30*time.Second).Should(BeEmpty(), "the webhooks are gone")
	installValidatingTwins()
	Eventually(func() map[string]bool { return decide(backstopCorpus[0]).warned }, time.Minute).
		Should(HaveKey(admission.RuleDefaultingBackstop), "the backstop's twin is in force")
	backstopAPIServer = decideAll(backstopCorpus)
	installMutatingTwins()
	apiServer = decideAll(corpus)
	defaultingAPIServer = decideAll(defaultingCorpus)
	bindAsRendered()
	apiServerDenies = decideAll(corpus)

	By("both, as the chart installs them")
	restoreWebhooks(mutating[0], validating[0])
	both = decideAll(corpus)
	defaultingBoth = decideAll(defaultingCorpus)
})

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

var _ = ReportAfterEach(func(r SpecReport) { testenv.ReportFailure(env, r) })

// kueueFrameworks enables every catalog framework but TrainJob's (Kueue's
// TrainJob webhook refuses one whose training runtime is not installed, and
// the Kubeflow trainer does not run here), so that Kueue manages the corpus.
func kueueFrameworks() []string {
	var out []string
	for _, in := range integrations.All() {
		if in.Framework != "" && in.Framework != "trainer.kubeflow.org/trainjob" && !slices.Contains(out, in.Framework) {
			out = append(out, in.Framework)
		}
	}
	return out
}

// warningRecorder keeps the API server's warnings until decide takes them.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func impersonating(ic rest.ImpersonationConfig) client.Client {
	c := rest.CopyConfig(env.Config)
	c.Impersonate = ic
	c.WarningHandlerWithContext = warnings
	cl, err := client.New(c, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return cl
}
