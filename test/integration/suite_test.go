// Package integration proves kueue-guard's behaviour through a real kube-apiserver
// and etcd: the API server calls our webhook server exactly as it would in a cluster.
package integration

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Integration Suite")
}

var (
	ctx       context.Context
	cancel    context.CancelFunc
	env       *testenv.Env
	k8sClient client.Client
	srv       *testenv.Server
	// policyDir is the policy directory the suite's server watches; it starts
	// empty and the policy specs write into it.
	policyDir string
	// serverRequests counts the API requests our server makes, other than watches.
	serverRequests = &requestCounter{}
)

// requestCounter records every API request our server's client makes, except
// long-running watches and the audit loop's Lease campaign, to prove the
// admission path reads only the cache. The campaign retries every 2 s on a timer
// of its own (the suite has no kueue-guard-system namespace), so counting it
// made the proof depend on how fast a burst of admissions ran.
type requestCounter struct {
	mu       sync.Mutex
	requests []string
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		lease := strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/")
		if r.URL.Query().Get("watch") != "true" && !lease {
			c.mu.Lock()
			c.requests = append(c.requests, r.Method+" "+r.URL.Path)
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (c *requestCounter) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// suiteConfig is the configuration the suite's server runs with: the defaults plus
// a GPU routing rule for namespaces labeled team=ml.
func suiteConfig() *config.Configuration {
	cfg := testenv.ConfigWithoutKueue()
	cfg.Defaulting.Rules = []config.DefaultingRule{{
		Name:              "gpu-jobs",
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
		RequestsResource:  "nvidia.com/gpu",
		LocalQueue:        "gpu",
	}}
	cfg.Policies.Directory = policyDir
	Expect(cfg.Validate()).To(BeEmpty())
	return cfg
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	opts := testenv.WebhookOptions()
	var err error
	policyDir, err = os.MkdirTemp("", "kueue-guard-policies-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, policyDir)
	opts.TrustedRequester = trust.New(suiteConfig().Trust.Controllers).CEL()
	env, err = testenv.Start([]*admissionregistrationv1.MutatingWebhookConfiguration{webhookconfig.Mutating(opts)},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{webhookconfig.Validating(opts)})
	Expect(err).NotTo(HaveOccurred())
	k8sClient = env.Client

	startServer(suiteConfig())
})

// startServer (re)starts the suite's webhook server with a configuration.
func startServer(cfg *config.Configuration) {
	if srv != nil {
		Expect(srv.Stop()).To(Succeed())
	}
	restCfg := rest.CopyConfig(env.Config)
	restCfg.Wrap(serverRequests.wrap)
	var err error
	srv, err = env.StartServer(ctx, restCfg, cfg)
	Expect(err).NotTo(HaveOccurred())
}

var _ = AfterSuite(func() {
	if srv != nil {
		Expect(srv.Stop()).To(Succeed())
	}
	cancel()
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// clientWithWarnings returns a client whose warnings the test can read.
func clientWithWarnings() (client.Client, *testenv.Warnings) {
	w := &testenv.Warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c, w
}

// clientAs returns a client that impersonates user (the suite's admin may), so
// that a request carries a controller's identity as the API server sees it.
func clientAs(user string) client.Client {
	cfg := rest.CopyConfig(env.Config)
	// system:masters: the test is about whose word the webhook takes, not RBAC.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}
