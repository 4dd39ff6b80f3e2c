// Package server wires kueue-guard's webhook server: the controller-runtime manager,
// the informer cache behind the cluster view, the admission pipeline and its
// handlers, health and readiness, and metrics. It is the one place where the parts
// meet; cmd/webhook and the integration tests both start the server through it.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/audit"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/handlers"
	kgmetrics "github.com/kueue-guard/kueue-guard/pkg/metrics"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/pkg/simwarn"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
)

// Options are everything the server needs; the serve command fills them from flags.
type Options struct {
	Config     *config.Configuration
	RESTConfig *rest.Config
	// Namespace is the server's own namespace, always exempt.
	Namespace string
	CertDir   string
	// AuditIdentity names this replica in the audit Lease (the pod name in a
	// cluster); empty means the host name and a random suffix.
	AuditIdentity string
	// ClientCAFile, when set, is a PEM bundle: the webhook port then requires
	// a client certificate it signed (the API server's, for webhook calls),
	// re-read when the file changes.
	ClientCAFile           string
	WebhookHost            string
	WebhookPort            int
	TLSMinVersion          uint16
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// PprofBindAddress serves /debug/pprof; empty disables it.
	PprofBindAddress string
	// MetricsSecure serves the metrics over HTTPS, to callers the API server
	// authenticates (TokenReview) and authorizes for a get of the /metrics
	// non-resource URL (SubjectAccessReview). Its certificate is read from
	// MetricsCertDir (CertDir when empty), reloaded when it changes.
	MetricsSecure  bool
	MetricsCertDir string
	// MaxInFlight bounds the admission requests served at once, and
	// MaxInFlightBytes the bytes of their bodies; beyond either they are
	// answered 429, which the API server retries. 0 does not bound.
	MaxInFlight      int
	MaxInFlightBytes int64
	// PolicyTimeout bounds one request's policy evaluation, waiting for a slot
	// included (policies.DefaultTimeout when zero); PolicyConcurrency bounds
	// the evaluations running at once (twice GOMAXPROCS when zero).
	PolicyTimeout     time.Duration
	PolicyConcurrency int
	ShutdownTimeout   time.Duration
	// ShutdownDelay is how long the server keeps serving after it is told to
	// stop, with readiness failing, so that endpoints stop sending it requests
	// before its listener closes; 0 stops at once.
	ShutdownDelay time.Duration
	// GCHeadroom is the heap the garbage collector lets the server allocate
	// between two cycles at the least, once it is ready (StartGCHeadroom);
	// 0 leaves Go's default pace.
	GCHeadroom int64
	Logger     logr.Logger
	// Certificates, when ManageCerts is set: the server generates a CA and a
	// serving certificate into a Secret, injects the CA into its webhook
	// configurations, and rotates both before they expire (for installs without
	// cert-manager).
	ManageCerts                 bool
	CertSecretName              string
	WebhookServiceName          string
	MutatingConfigurationName   string
	ValidatingConfigurationName string
	// Observer, when set, sees every answered admission request (tests).
	Observer handlers.Observer
}

// Scheme holds the types the server reads: the built-in ones and Kueue's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	utilruntime.Must(audit.AddToScheme(s))
	return s
}

// addAudit adds the audit loop: it judges with the webhook's own pipeline,
// view and policy engine (its evaluations yield to admission's), once the
// caches have synced and a policy set has loaded.
func (s *Server) addAudit(o Options, pipeline *guard.Pipeline, view cluster.View, engine *policies.Engine) error {
	// Reports are written with a client that reads the API server, not a
	// cache: the server never watches Reports.
	c, err := client.New(o.RESTConfig, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	loop, err := audit.NewLoop(audit.LoopOptions{
		Config: o.Config, OwnNamespace: o.Namespace, RESTConfig: o.RESTConfig, Client: c,
		Pipeline: pipeline, View: view, Identity: o.AuditIdentity,
		Severity: func(rule string) string {
			for _, p := range engine.Policies() {
				if p.ID == rule {
					return p.Severity
				}
			}
			return policies.DefaultSeverity
		},
		Ready:      func() error { return s.serving(engine) },
		Registerer: crmetrics.Registry, Logger: o.Logger.WithName("audit"),
	})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return s.mgr.Add(loop)
}

// Server is a configured, not yet started webhook server.
type Server struct {
	mgr      manager.Manager
	synced   atomic.Bool
	draining atomic.Bool
	delay    time.Duration
	logger   logr.Logger
}

// New builds the server.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("no configuration")
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	scheme := Scheme()
	var clientCA *clientCA
	if o.ClientCAFile != "" {
		var err error
		if clientCA, err = newClientCA(o.ClientCAFile, o.Logger.WithName("client-ca")); err != nil {
			return nil, err
		}
	}
	ws := newWebhookServer(o.WebhookHost, o.WebhookPort, o.CertDir, o.TLSMinVersion, clientCA)
	var certsReady chan struct{}
	if o.ManageCerts {
		certsReady = make(chan struct{})
		ws = certsReadyServer{Server: ws, ready: certsReady}
	}
	mgr, err := manager.New(o.RESTConfig, manager.Options{
		Scheme:                  scheme,
		Logger:                  o.Logger,
		Cache:                   cluster.CacheOptions(scheme, o.Config.KueueNamespace),
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		PprofBindAddress:        o.PprofBindAddress,
		WebhookServer:           ws,
		GracefulShutdownTimeout: &o.ShutdownTimeout,
		// The server only reads; every replica serves. No leader election.
		LeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	view, err := cluster.NewInformerView(ctx, mgr.GetCache(), mgr.GetAPIReader(), o.Config.KueueNamespace)
	if err != nil {
		return nil, err
	}
	view.SetOwnMutatingConfiguration(o.MutatingConfigurationName)
	if err := mgr.Add(view); err != nil {
		return nil, err
	}
	kueueServed, err := kgmetrics.Register(crmetrics.Registry, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kueue_guard_kueue_api_served",
		Help: "1 while Kueue's LocalQueues and ClusterQueues can be read (its CRDs serve kueue.x-k8s.io/v1beta2 and the informers have synced); 0 while queue checks are skipped with kueue_guard.queues_unknown.",
	}))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return followGauge(ctx, kueueServed, view.QueuesKnown, nil)
	})); err != nil {
		return nil, err
	}
	kueueServing, err := kgmetrics.Register(crmetrics.Registry, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kueue_guard_kueue_serving",
		Help: "1 while Kueue is serving (its CRDs are served and its workload mutating webhooks registered); 0 while new queued workloads are handled per kueueAbsent (kueue_guard.kueue_absent).",
	}))
	if err != nil {
		return nil, err
	}
	absentLog := o.Logger.WithName("kueue-absent")
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// Wait for the caches: before they sync, Kueue is not known to be away.
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		return followGauge(ctx, kueueServing, view.KueueServing, func(serving bool) {
			if serving {
				absentLog.Info("Kueue is serving: new queued workloads are left to Kueue's webhooks")
			} else {
				absentLog.Info("Kueue is not serving (webhooks not registered or CRDs not served): new queued workloads are handled per kueueAbsent",
					"kueueAbsent", o.Config.KueueAbsent)
			}
		})
	})); err != nil {
		return nil, err
	}
	info, err := newKueueInfo(view, mgr.GetCache().WaitForCacheSync, crmetrics.Registry, o.Logger.WithName("kueue-info"))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(info); err != nil {
		return nil, err
	}
	if o.ManageCerts {
		if err := addCertRotator(mgr, o, certsReady); err != nil {
			return nil, err
		}
	}
	if o.MutatingConfigurationName != "" {
		order, err := newWebhookOrder(mgr.GetCache(), o.MutatingConfigurationName, crmetrics.Registry, o.Logger.WithName("webhook-order"))
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(order); err != nil {
			return nil, err
		}
	}
	engine, err := policies.NewEngine(policies.Options{
		Directory:         o.Config.Policies.Directory,
		OnError:           o.Config.Policies.OnError,
		AllowBuiltins:     o.Config.Policies.AllowBuiltins,
		DecisionCacheSize: o.Config.Policies.EngineCacheSize(),
		Timeout:           o.PolicyTimeout,
		MaxConcurrent:     o.PolicyConcurrency,
		Registerer:        crmetrics.Registry,
		Logger:            o.Logger.WithName("policies"),
	})
	if err != nil {
		return nil, fmt.Errorf("policy engine: %w", err)
	}
	if err := mgr.Add(engine); err != nil {
		return nil, err
	}
	pipeline, err := guard.Build(o.Config, o.Namespace, policies.NewStep(engine), simwarn.NewStep(o.Config))
	if err != nil {
		return nil, err
	}
	metrics, err := handlers.NewMetrics(crmetrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	hooks := mgr.GetWebhookServer()
	limit := handlers.NewInFlight(o.MaxInFlight, o.MaxInFlightBytes, metrics)
	for path, h := range map[string]*handlers.Handler{
		webhookconfig.MutateWorkloadsPath:          handlers.NewMutatingWorkloads(pipeline, view, metrics),
		webhookconfig.ValidateWorkloadsPath:        handlers.NewValidatingWorkloads(pipeline, view, metrics),
		webhookconfig.ValidateKueueControllersPath: handlers.NewValidatingControllers(pipeline, view, metrics),
	} {
		hooks.Register(path, limit.Limit(handlers.Serve(h.WithObserver(o.Observer), o.Logger.WithName("webhook").WithValues("path", path))))
	}

	s := &Server{mgr: mgr, delay: o.ShutdownDelay, logger: o.Logger}
	if o.Config.Audit.Enabled() {
		if err := s.addAudit(o, pipeline, view, engine); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("shutdown", s.notDraining); err != nil {
		return nil, err
	}
	started := ws.StartedChecker()
	if clientCA != nil {
		started = clientCA.startedChecker(o.WebhookHost, o.WebhookPort)
	}
	if err := mgr.AddReadyzCheck("webhook", started); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("cache", s.cacheSynced); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("policies", engine.ReadyCheck); err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			s.synced.Store(true)
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return s.tuneGC(ctx, o.GCHeadroom, engine)
	})); err != nil {
		return nil, err
	}
	return s, nil
}

// tuneGC waits until the server is ready, returns to the OS what starting
// left (the lists' and the policies' compilation garbage: the idle replica
// keeps only what it holds), then gives the collector its headroom until ctx
// ends. Start-up keeps Go's pace, so that a large cluster's lists do not
// leave more garbage behind.
func (s *Server) tuneGC(ctx context.Context, headroom int64, engine *policies.Engine) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return s.serving(engine) == nil, nil
	})
	if err != nil {
		return nil // stopped before it was ready
	}
	debug.FreeOSMemory()
	stop, started := StartGCHeadroom(headroom)
	defer stop()
	if started {
		s.logger.Info("garbage collector paced for a headroom above the live heap", "bytes", headroom)
	}
	<-ctx.Done()
	return nil
}

// followGauge sets g to 1 while known() holds, and 0 otherwise, every second
// until ctx ends.
func followGauge(ctx context.Context, g prometheus.Gauge, known func() bool, changed func(bool)) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last *bool
	for {
		now := known()
		if now {
			g.Set(1)
		} else {
			g.Set(0)
		}
		if changed != nil && (last == nil || *last != now) {
			changed(now)
		}
		last = &now
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// metricsOptions serves the metrics in the clear, or over HTTPS to
// authenticated and authorized callers only (controller-runtime's filters, as
// Kueue's manager does).
func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if !o.MetricsSecure {
		return m
	}
	m.SecureServing = true
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	m.CertDir = o.MetricsCertDir
	if m.CertDir == "" {
		m.CertDir = o.CertDir
	}
	m.CertName, m.KeyName = "tls.crt", "tls.key"
	m.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = o.TLSMinVersion
		c.NextProtos = []string{"http/1.1"}
	}}
	return m
}

func (s *Server) cacheSynced(*http.Request) error {
	if !s.synced.Load() {
		return errors.New("informer caches have not synced")
	}
	return nil
}

// serving says why the server cannot judge yet: its caches have not synced,
// or no policy set has loaded (the audit and the GC headroom wait for both).
func (s *Server) serving(engine *policies.Engine) error {
	if err := s.cacheSynced(nil); err != nil {
		return err
	}
	return engine.ReadyCheck(nil)
}

func (s *Server) notDraining(*http.Request) error {
	if s.draining.Load() {
		return errors.New("shutting down")
	}
	return nil
}

// Start runs the server until ctx is cancelled (SIGTERM), then shuts down
// without refusing a request: readiness fails at once, so that the Service's
// endpoints drop this replica, while the webhook keeps serving for the
// shutdown delay (longer than endpoint propagation); only then does the
// listener close and in-flight requests drain, within the shutdown timeout.
// The API server does not retry a refused connection: a listener closed while
// it still sends here would fail its requests.
func (s *Server) Start(ctx context.Context) error {
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.mgr.Start(run) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.logger.Info("shutting down: readiness fails now; serving until the shutdown delay has passed", "delay", s.delay)
	select {
	case err := <-done:
		return err
	case <-time.After(s.delay):
	}
	stop()
	return <-done
}

// Ready reports whether the caches have synced (the readiness endpoint also
// checks the webhook server).
func (s *Server) Ready() bool { return s.synced.Load() }
