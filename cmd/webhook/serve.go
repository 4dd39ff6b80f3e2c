package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/pkg/server"
)

type serveFlags struct {
	configFile, kubeconfig, certDir, host, namespace     string
	metricsAddr, probeAddr, pprofAddr, tlsMinVersion     string
	port, maxInFlight, maxInFlightMiB, policyConcurrency int
	gcHeadroomMiB                                        int
	shutdownTimeout, shutdownDelay, policyTimeout        time.Duration
	zap                                                  zap.Options
	manageCerts, metricsSecure                           bool
	metricsCertDir                                       string
	clientCAFile                                         string
	certSecret, webhookService                           string
	mutatingName, validatingName                         string
}

func newServeCommand() *cobra.Command { return newServeCommandWith(&serveFlags{}) }

// newServeCommandWith binds the serve command's flags to f.
func newServeCommandWith(f *serveFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the admission webhooks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.configFile, "config", "", "Configuration file (config.kueue-guard.io/v1alpha1); defaults apply when empty")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "Kubeconfig file; in-cluster configuration when empty")
	fl.StringVar(&f.certDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding tls.crt and tls.key; reloaded when they change")
	fl.StringVar(
		&f.clientCAFile,
		"client-ca-file",
		"",
		"PEM bundle of the CAs whose client certificates the webhook port requires (the API server's, set in its AdmissionConfiguration); reloaded when it changes; empty accepts any caller",
	)
	fl.StringVar(&f.host, "webhook-host", "", "Address the webhook server listens on (all interfaces when empty)")
	fl.IntVar(&f.port, "webhook-port", 9443, "Port the webhook server listens on")
	fl.IntVar(
		&f.maxInFlight,
		"max-in-flight",
		256,
		"Admission requests served at once, over all webhook paths; beyond it they are answered 429 with Retry-After, which the API server retries (0: no bound)",
	)
	fl.IntVar(
		&f.maxInFlightMiB,
		"max-in-flight-mib",
		8,
		"MiB of request bodies served at once, over all webhook paths; beyond it requests are answered 429 with Retry-After, as past --max-in-flight (0: no bound). One request of any allowed size is always served",
	)
	fl.DurationVar(
		&f.policyTimeout,
		"policy-timeout",
		policies.DefaultTimeout,
		"How long one request's policy evaluation may take, waiting for a slot included; beyond it policies.onError decides (keep it below the webhook's timeoutSeconds)",
	)
	fl.IntVar(&f.policyConcurrency, "policy-concurrency", 0, "Policy evaluations running at once; a request waits for a slot within --policy-timeout (0: twice GOMAXPROCS)")
	fl.IntVar(
		&f.gcHeadroomMiB,
		"gc-headroom-mib",
		server.DefaultGCHeadroom>>20,
		"MiB the garbage collector lets the server allocate between two cycles at the least, once it is ready (fewer cycles for a small live heap; the memory limit still bounds the heap). 0, or GOGC set, leaves Go's default pace",
	)
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it")
	fl.BoolVar(
		&f.metricsSecure,
		"metrics-secure",
		true,
		"Serve the metrics over HTTPS, to callers the API server authenticates and authorizes for a get of /metrics; false serves them in the clear to anyone who reaches the port",
	)
	fl.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "Directory holding the metrics server's tls.crt and tls.key (default --cert-dir); reloaded when they change")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz")
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof profiles, for a profiling session; off when empty (bind it to loopback: profiles are not authenticated)")
	fl.StringVar(&f.tlsMinVersion, "tls-min-version", "1.3", "Minimum TLS version of the webhook server: 1.3 or 1.2")
	fl.StringVar(&f.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "The server's own namespace, never mutated or validated (default $POD_NAMESPACE)")
	fl.BoolVar(&f.manageCerts, "manage-certs", false, "Generate, inject and rotate the serving certificate (when cert-manager is not used)")
	fl.StringVar(&f.certSecret, "cert-secret-name", "", "Secret holding the managed certificate (with --manage-certs)")
	fl.StringVar(&f.webhookService, "webhook-service-name", "", "Service the certificate is issued for (with --manage-certs)")
	fl.StringVar(&f.mutatingName, "mutating-webhook-configuration", "", "kueue-guard's MutatingWebhookConfiguration: checked to run before Kueue's, and given the CA with --manage-certs")
	fl.StringVar(&f.validatingName, "validating-webhook-configuration", "", "ValidatingWebhookConfiguration to inject the CA into (with --manage-certs)")
	fl.DurationVar(
		&f.shutdownDelay,
		"shutdown-delay",
		5*time.Second,
		"How long to keep serving after SIGTERM, with readiness failing, before the listener closes: longer than the cluster takes to remove the pod from the Service's endpoints",
	)
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long to finish in-flight requests once the listener has closed")
	goFlags := flag.NewFlagSet("serve", flag.ContinueOnError)
	f.zap.BindFlags(goFlags)
	cmd.Flags().AddGoFlagSet(goFlags)
	return cmd
}

func runServe(cmd *cobra.Command, f *serveFlags) error {
	logger := zap.New(zap.UseFlagOptions(&f.zap))
	ctrl.SetLogger(logger)

	cfg := config.Default()
	if f.configFile != "" {
		var err error
		if cfg, err = config.Load(f.configFile); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("invalid configuration: %w", err)}
		}
	}
	if f.policyTimeout <= 0 {
		return &exitError{code: 2, err: fmt.Errorf("--policy-timeout must be positive, got %v", f.policyTimeout)}
	}
	if f.gcHeadroomMiB < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--gc-headroom-mib must be 0 (Go's default pace) or more, got %d", f.gcHeadroomMiB)}
	}
	if f.policyConcurrency < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--policy-concurrency must be 0 (twice GOMAXPROCS) or more, got %d", f.policyConcurrency)}
	}
	minTLS, err := server.ParseTLSVersion(f.tlsMinVersion)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	restCfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	srv, err := server.New(ctx, server.Options{
		Config:                      cfg,
		RESTConfig:                  restCfg,
		Namespace:                   f.namespace,
		CertDir:                     f.certDir,
		ClientCAFile:                f.clientCAFile,
		WebhookHost:                 f.host,
		WebhookPort:                 f.port,
		TLSMinVersion:               minTLS,
		MetricsBindAddress:          f.metricsAddr,
		MetricsSecure:               f.metricsSecure,
		MetricsCertDir:              f.metricsCertDir,
		HealthProbeBindAddress:      f.probeAddr,
		PprofBindAddress:            f.pprofAddr,
		MaxInFlight:                 f.maxInFlight,
		MaxInFlightBytes:            int64(f.maxInFlightMiB) << 20,
		PolicyTimeout:               f.policyTimeout,
		PolicyConcurrency:           f.policyConcurrency,
		ShutdownTimeout:             f.shutdownTimeout,
		ShutdownDelay:               f.shutdownDelay,
		GCHeadroom:                  int64(f.gcHeadroomMiB) << 20,
		Logger:                      logger,
		ManageCerts:                 f.manageCerts,
		CertSecretName:              f.certSecret,
		WebhookServiceName:          f.webhookService,
		MutatingConfigurationName:   f.mutatingName,
		ValidatingConfigurationName: f.validatingName,
	})
	if err != nil {
		return err
	}
	if limit, err := server.SetMemoryLimit(); err != nil {
		logger.Error(err, "the container's memory limit could not be read; the Go runtime has no soft memory limit")
	} else if limit > 0 {
		logger.Info("Go runtime memory limit set from the container's", "bytes", limit, "share", server.MemoryLimitShare)
	}
	logger.Info("starting kueue-guard", "version", version, "profile", cfg.InstallProfile)
	return srv.Start(ctx)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}
