// Package equivalence proves that `kueue-guard review` and the webhook give the
// same answer: every object of the review corpus is created through a real
// kube-apiserver that calls kueue-guard's real server, and the decisions, rules,
// warnings and patches the server answered are compared with the reviewer's for
// the same manifest, against the same cluster state, configuration and policies.
//
// The suite runs one control plane for all its specs.
package equivalence

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/rest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestEquivalence(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook/reviewer equivalence Suite")
}

// Paths of the shared review test data.
var (
	testdata     = filepath.Join("..", "testdata")
	corpusDir    = filepath.Join(testdata, "corpus")
	statePath    = filepath.Join(testdata, "cluster-state.yaml")
	configPath   = filepath.Join(testdata, "config.yaml")
	ownNamespace = "kueue-guard-system"
)

// Webhook names as the server's handlers report them to the observer.
var (
	mutateWebhook = strings.TrimPrefix(webhookconfig.MutateWorkloadsPath, "/")
)

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
	srv    *testenv.Server
	cfg    *config.Configuration
	// policyDir holds the shipped policies (no tests), for the server and the reviewer.
	policyDir string
	rec       = &recorder{byKey: map[string][]observation{}}
	// user is who the test client is, as the API server reports it to webhooks;
	// the reviewer reviews as the same user.
	user authenticationv1.UserInfo
)

// observation is one admission answer of the server.
type observation struct {
	webhook  string
	request  admission.Request
	response admission.Response
}

// recorder keeps every admission answer by kind, namespace and name.
type recorder struct {
	mu    sync.Mutex
	byKey map[string][]observation
}

func objectKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func (r *recorder) observe(webhook string, req admission.Request, resp admission.Response) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := objectKey(req.Kind.Kind, req.Namespace, req.Name)
	r.byKey[k] = append(r.byKey[k], observation{webhook: webhook, request: req, response: resp})
}

func (r *recorder) reset(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byKey, key)
}

func (r *recorder) get(key string) []observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observation(nil), r.byKey[key]...)
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	policyDir, err = os.MkdirTemp("", "kueue-guard-review-policies-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, policyDir)
	n, err := testenv.CopyShippedPolicies(policyDir)
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(BeNumerically(">", 1))

	cfg, err = config.Load(configPath)
	Expect(err).NotTo(HaveOccurred())
	cfg.Policies.Directory = policyDir
	// The reviewer judges as if Kueue were serving; no Kueue manager runs
	// here, so the webhook is told the same (test/lifecycle plays kueueAbsent).
	cfg.KueueAbsent = config.KueueAbsentAllow

	opts := testenv.WebhookOptions()
	Expect(opts.ServiceNamespace).To(Equal(ownNamespace))
	env, err = testenv.Start([]*admissionregistrationv1.MutatingWebhookConfiguration{webhookconfig.Mutating(opts)},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{webhookconfig.Validating(opts)})
	Expect(err).NotTo(HaveOccurred())
	srv, err = env.StartServerWith(ctx, rest.CopyConfig(env.Config), cfg, rec.observe)
	Expect(err).NotTo(HaveOccurred())

	applyClusterState()
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
