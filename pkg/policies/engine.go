package policies

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kueue-guard/kueue-guard/pkg/config"
)

// Defaults of Options, chosen for a webhook whose API server timeout is 10s and
// whose default failurePolicy is Fail: a policy evaluation must never be the
// reason the API server gives up on the webhook.
const (
	// DefaultTimeout bounds one request's evaluation, waiting for a slot included.
	DefaultTimeout = 2 * time.Second
	// DefaultDebounce coalesces the burst of events one ConfigMap update causes.
	DefaultDebounce = 100 * time.Millisecond
	// DefaultResync re-reads the directory in case a change event was lost (an
	// inotify queue overflow); an unchanged directory costs one read and a hash.
	DefaultResync = time.Minute
)

// Options configure an Engine. Zero values mean the defaults.
type Options struct {
	// Directory is the policy directory (the configuration's policies.directory).
	Directory string
	// OnError decides what an evaluation failure does to the request
	// (policies.onError): deny (the default, fail closed) or allow.
	OnError config.OnError
	// Timeout bounds one request's evaluation, waiting for a slot included.
	Timeout time.Duration
	// MaxConcurrent bounds the evaluations running at once, so that a burst of
	// requests or an expensive policy cannot starve the server; default
	// 2×GOMAXPROCS.
	MaxConcurrent int
	// Debounce is how long the watcher waits for more changes before reloading.
	Debounce time.Duration
	// Resync is how often the watcher re-reads the directory regardless of events;
	// negative disables it.
	Resync time.Duration
	// AllowBuiltins are built-ins of OptInBuiltins the admin allows policies to
	// call (policies.allowBuiltins).
	AllowBuiltins []string
	// DecisionCacheSize bounds the decisions a policy set reuses
	// (policies.decisionCacheSize); 0 means DefaultDecisionCacheSize, a
	// negative size reuses none.
	DecisionCacheSize int
	// Registerer receives the engine's metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger receives load results and refused sets; the zero Logger discards.
	Logger logr.Logger
}

// Engine evaluates the current policy set. It is safe for concurrent use: a loaded
// set is immutable and is swapped atomically, so a request is evaluated entirely
// against one version.
type Engine struct {
	opts    Options
	caps    *ast.Capabilities
	slots   *slots
	metrics *Metrics
	set     atomic.Pointer[policySet]

	// recent are the inputs a new set is tried on before it serves.
	recent canaryRing

	loadMu     sync.Mutex
	version    uint64
	failedHash string
	lastErr    atomic.Pointer[error]

	// opaCache evaluates with OPA's own rule cache rather than refCache:
	// set by tests, for a reference evaluation.
	opaCache bool
}

// NewEngine validates the options and registers the metrics. It loads nothing:
// call Load (one-shot) or Start (load and watch).
func NewEngine(o Options) (*Engine, error) {
	if o.Directory == "" {
		return nil, errNoDir
	}
	switch o.OnError {
	case "":
		o.OnError = config.OnErrorDeny
	case config.OnErrorDeny, config.OnErrorAllow:
	default:
		return nil, fmt.Errorf("policies.onError must be %s or %s, got %q", config.OnErrorDeny, config.OnErrorAllow, o.OnError)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 2 * runtime.GOMAXPROCS(0)
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.DecisionCacheSize == 0 {
		o.DecisionCacheSize = DefaultDecisionCacheSize
	}
	if o.Resync == 0 {
		o.Resync = DefaultResync
	}
	caps, err := Capabilities(o.AllowBuiltins...)
	if err != nil {
		return nil, fmt.Errorf("policies.allowBuiltins: %w", err)
	}
	m, err := NewMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("registering policy metrics: %w", err)
	}
	return &Engine{opts: o, caps: caps, slots: newSlots(o.MaxConcurrent), metrics: m}, nil
}

// OnError is the configured failure mode, for the step and for reports.
func (e *Engine) OnError() config.OnError { return e.opts.OnError }

// Metrics exposes the engine's series (tests read them).
func (e *Engine) Metrics() *Metrics { return e.metrics }

// Ready reports whether a policy set has been loaded. Until then every request
// would fail by policies.onError, so the server must not report ready.
func (e *Engine) Ready() bool { return e.set.Load() != nil }

// ReadyCheck is Ready as a controller-runtime healthz.Checker, with the reason.
func (e *Engine) ReadyCheck(_ *http.Request) error {
	if e.Ready() {
		return nil
	}
	if err := e.lastErr.Load(); err != nil {
		return fmt.Errorf("no policy set loaded yet: %w", *err)
	}
	return fmt.Errorf("no policy set loaded yet from %s", e.opts.Directory)
}

// Policies returns the serving set's policies, sorted by id (nil before the first
// load). Callers must not modify them.
func (e *Engine) Policies() []*Policy {
	if s := e.set.Load(); s != nil {
		return s.policies
	}
	return nil
}

// Version identifies the serving set: a counter increased by every swap, and the
// hash of the files it was compiled from. Both are zero before the first load.
func (e *Engine) Version() (uint64, string) {
	if s := e.set.Load(); s != nil {
		return s.version, s.hash
	}
	return 0, ""
}

// Load reads and compiles the policy directory once and swaps the new set in. A
// set that fails to read, parse or compile is refused: the previous set (if any)
// keeps serving, the error is logged with file and line, counted, and returned.
// So is a set that fails at evaluation on a recent input the serving set judged
// without error (see canary).
// An unchanged directory is not recompiled.
func (e *Engine) Load() error {
	_, err := e.load(context.Background())
	return err
}

// load returns the directories it read, for the watcher.
func (e *Engine) load(ctx context.Context) ([]string, error) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	dir := e.opts.Directory
	snap, err := readSnapshot(dir, false)
	if err != nil {
		return nil, e.refuse(&LoadError{Dir: dir, Problems: []Problem{{Message: err.Error()}}})
	}
	if cur := e.set.Load(); cur != nil && cur.hash == snap.hash {
		return snap.dirs, nil
	}
	if snap.hash == e.failedHash {
		if p := e.lastErr.Load(); p != nil {
			return snap.dirs, *p
		}
	}
	set, err := buildSet(ctx, dir, snap, e.caps, e.opts.DecisionCacheSize, e.opts.Timeout)
	if err == nil && e.set.Load() != nil {
		err = e.canary(ctx, set)
	}
	if err != nil {
		e.failedHash = snap.hash
		return snap.dirs, e.refuse(err)
	}
	e.version++
	set.version = e.version
	e.set.Store(set)
	e.failedHash = ""
	e.lastErr.Store(nil)
	e.metrics.Loads.Inc()
	e.metrics.Policies.Set(float64(len(set.policies)))
	ids := make([]string, len(set.policies))
	for i, p := range set.policies {
		ids[i] = p.ID
	}
	e.opts.Logger.Info("policy set loaded", "dir", dir, "version", set.version, "hash", set.hash[:12], "policies", ids)
	return snap.dirs, nil
}

// refuse records a refused set: the previous one keeps serving.
func (e *Engine) refuse(err error) error {
	e.metrics.LoadErrors.Inc()
	e.lastErr.Store(&err)
	serving, _ := e.Version()
	if le, ok := errors.AsType[*LoadError](err); ok {
		for _, p := range le.Problems {
			e.opts.Logger.Error(errors.New(p.Message), "policy set refused; the previous set keeps serving",
				"dir", le.Dir, "file", p.File, "line", p.Line, "servingVersion", serving)
		}
	} else {
		e.opts.Logger.Error(err, "policy set refused; the previous set keeps serving", "dir", e.opts.Directory, "servingVersion", serving)
	}
	return err
}
