package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/handlers"
	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
)

// Binaries the control plane needs, built by `make testbin`.
var binaries = []string{"kube-apiserver", "etcd", "kubectl"}

// AssetsDir is where the control plane binaries are: $KUBEBUILDER_ASSETS, or
// bin/testcp in the repository.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "bin", "testcp")
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("test control plane binary %s missing in %s: run `make testbin`", b, dir)
		}
	}
	return dir, nil
}

// Env is a running control plane with our CRDs and webhook configurations.
type Env struct {
	*envtest.Environment
	Client         client.Client
	KubeconfigPath string
	// WebhookClientCA is the CA of the client certificate the API server
	// presents to webhooks (StartOptions.WebhookClientCert), else nil.
	WebhookClientCA []byte
	// GCHeadroom is the servers' --gc-headroom-mib, in bytes: 0 (Go's own
	// pace) unless a suite sets it. The pace is the whole test process's.
	GCHeadroom int64
	assets     string
	// children are the components started next to the API server (see
	// process.go); Stop stops them first.
	children children
}

// Start starts kube-apiserver and etcd, installs the CRDs and registers the given
// webhook configurations, pointed at a local serving port whose certificate is in
// WebhookInstallOptions.LocalServingCertDir.
func Start(mutating []*admissionregistrationv1.MutatingWebhookConfiguration,
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration) (*Env, error) {
	return StartWithout(nil, mutating, validating)
}

// StartWithout is Start without the CRDs of the given API groups (a cluster
// where Kueue, say, is not installed yet). CRDFilesOf lists them, to install
// them later.
func StartWithout(groups []string, mutating []*admissionregistrationv1.MutatingWebhookConfiguration,
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration) (*Env, error) {
	return StartWith(StartOptions{WithoutGroups: groups}, mutating, validating)
}

// StartOptions shape the control plane StartWith starts.
type StartOptions struct {
	// WithoutGroups are API groups whose CRDs are not installed.
	WithoutGroups []string
	// WebhookClientCert makes the API server present a client certificate
	// (a new CA's, in Env.WebhookClientCA) on every webhook call, as an
	// AdmissionConfiguration with a kubeConfigFile configures it.
	WebhookClientCert bool
}

// StartWith is Start with options.
func StartWith(so StartOptions, mutating []*admissionregistrationv1.MutatingWebhookConfiguration,
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration) (*Env, error) {
	groups := so.WithoutGroups
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	all, err := CRDFiles()
	if err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, f := range CRDFilesOf(all, groups...) {
		skip[f] = true
	}
	var crds []string
	for _, f := range all {
		if !skip[f] {
			crds = append(crds, f)
		}
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                server.Scheme(),
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks:   mutating,
			ValidatingWebhooks: validating,
			LocalServingHost:   "127.0.0.1",
		},
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	var clientCA []byte
	if so.WebhookClientCert {
		var file string
		if clientCA, file, err = webhookClientConfig(); err != nil {
			return nil, err
		}
		te.ControlPlane.GetAPIServer().Configure().Set("admission-control-config-file", file)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	e := &Env{Environment: te, assets: assets, WebhookClientCA: clientCA}
	if e.Client, err = client.New(cfg, client.Options{Scheme: te.Scheme}); err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	f, err := os.CreateTemp("", "kueue-guard-kubeconfig-*")
	if err == nil {
		_, err = f.Write(te.KubeConfig)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	e.KubeconfigPath = f.Name()
	return e, nil
}

// Stop stops the components started next to the API server (kube-controller-manager,
// Kueue), then the control plane, and removes the kubeconfig.
func (e *Env) Stop() error {
	err := e.children.stop()
	_ = os.Remove(e.KubeconfigPath)
	return errors.Join(err, e.Environment.Stop())
}

// Kubectl runs the control plane's own kubectl against the test API server.
func (e *Env) Kubectl(stdin []byte, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(filepath.Join(e.assets, "kubectl"), append([]string{"--kubeconfig", e.KubeconfigPath}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// WebhookOptions are the webhookconfig options for the test: envtest rewrites the
// service reference into a URL on its local serving port.
func WebhookOptions() webhookconfig.Options {
	return webhookconfig.Options{ServiceNamespace: "kueue-guard-system", ServiceName: "kueue-guard-webhook",
		ExcludeNamespaces: []string{"kube-system", "kueue-guard-system"}, TimeoutSeconds: 10}
}

// Server is our webhook server running in the test process.
type Server struct {
	cancel     context.CancelFunc
	done       chan error
	ProbeAddr  string
	MetricAddr string

	stopOnce sync.Once
	stopErr  error
}

// StartServer runs kueue-guard's real server (the same wiring as `serve`) against
// the control plane, on envtest's local serving port and certificate, and waits
// until /readyz passes. restCfg lets a test wrap the transport.
func (e *Env) StartServer(ctx context.Context, restCfg *rest.Config, cfg *config.Configuration) (*Server, error) {
	return e.StartServerWith(ctx, restCfg, cfg, nil)
}

// StartServerWith is StartServer with an observer of every admission answer.
func (e *Env) StartServerWith(ctx context.Context, restCfg *rest.Config, cfg *config.Configuration, observer handlers.Observer) (*Server, error) {
	return e.StartServerOptions(ctx, restCfg, cfg, func(o *server.Options) { o.Observer = observer })
}

// StartServerOptions is StartServer with the server's options edited by tune
// before it starts (a shutdown delay, say).
func (e *Env) StartServerOptions(ctx context.Context, restCfg *rest.Config, cfg *config.Configuration, tune func(*server.Options)) (*Server, error) {
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	probe, metrics := addrs[0], addrs[1]
	o := e.WebhookInstallOptions
	opts := server.Options{
		Config:                 cfg,
		RESTConfig:             restCfg,
		Namespace:              "kueue-guard-system",
		CertDir:                o.LocalServingCertDir,
		WebhookHost:            o.LocalServingHost,
		WebhookPort:            o.LocalServingPort,
		TLSMinVersion:          0x0304,
		MetricsBindAddress:     metrics,
		HealthProbeBindAddress: probe,
		ShutdownTimeout:        10 * time.Second,
		// As the chart passes it: the webhook order check watches it.
		MutatingConfigurationName: webhookconfig.MutatingName,
		GCHeadroom:                e.GCHeadroom,
		Logger:                    log.FromContext(ctx),
	}
	if tune != nil {
		tune(&opts)
	}
	srv, err := server.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{cancel: cancel, done: make(chan error, 1), ProbeAddr: probe, MetricAddr: metrics}
	go func() { s.done <- srv.Start(ctx) }()
	// A ceiling, not a wait: a server starting over a large cluster on two
	// loaded cores lists it first.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			cancel()
			return nil, fmt.Errorf("server stopped before it was ready: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			// Stopped before the next server takes the port.
			cancel()
			return nil, fmt.Errorf("server not ready after three minutes (then stopped: %v)", <-s.done)
		}
	}
}

// Stop shuts the server down and waits for it.
// A second Stop returns the first one's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.cancel()
		s.stopErr = <-s.done
	})
	return s.stopErr
}

// Terminate tells the server to stop, as SIGTERM does, without waiting; Done
// reports its end.
func (s *Server) Terminate() { s.cancel() }

// Done receives the server's result once it has stopped.
func (s *Server) Done() <-chan error { return s.done }

// MetricValue reads a server's /metrics at addr and sums the samples of one
// metric over all its label sets (0 when it has none yet).
func MetricValue(addr, name string) (float64, error) {
	series, err := MetricSeries(addr, name)
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range series {
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %w", name, err)
		}
		total += v
	}
	return total, nil
}

// MetricSeries returns the exposition lines of every series of the metric name
// at addr ("name{labels} value"), for specs that check labels.
func MetricSeries(addr, name string) ([]string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			out = append(out, line)
		}
	}
	return out, nil
}

// webhookClientConfig writes a client certificate and the AdmissionConfiguration
// that makes the API server present it to every webhook (the kubeconfig's
// "*" user), and returns the certificate's CA and the configuration's path.
func webhookClientConfig() (ca []byte, admissionConfig string, err error) {
	dir, err := os.MkdirTemp("", "kueue-guard-webhook-client-*")
	if err != nil {
		return nil, "", err
	}
	if ca, err = WriteClientCert(dir, "kube-apiserver-webhook-client"); err != nil {
		return nil, "", err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: %s
    client-key: %s
`, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")), 0o600); err != nil {
		return nil, "", err
	}
	var plugins strings.Builder
	for _, name := range []string{"ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"} {
		fmt.Fprintf(&plugins, `- name: %s
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, name, kubeconfig)
	}
	admissionConfig = filepath.Join(dir, "admission.yaml")
	err = os.WriteFile(admissionConfig, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+plugins.String()), 0o600)
	return ca, admissionConfig, err
}

// ConfigWithoutKueue is config.Default() for a suite that runs no Kueue
// manager: with kueueAbsent: allow, since no Kueue webhook is ever registered
// there and kueue-guard would otherwise create every queued workload suspended.
// test/lifecycle plays kueueAbsent itself, with the real Kueue manager.
func ConfigWithoutKueue() *config.Configuration {
	cfg := config.Default()
	cfg.KueueAbsent = config.KueueAbsentAllow
	return cfg
}
