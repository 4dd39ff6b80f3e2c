// Package policies is kueue-guard's Rego policy engine: it loads the policy
// directory, compiles it once per version, watches it for changes, builds the
// policy input from an admission request and the cluster view, evaluates every
// policy under a deadline and a concurrency bound, and turns the results into
// violations of the admission pipeline (Step). It also runs the policies' own
// Rego tests (RunTests) for `kueue-guard policy test`.
//
// A policy is any package that defines `deny` and/or `warn`, sets of strings or of
// {"msg": ..., "field": ...} objects; its id is the package path without "data.".
// Its package METADATA sets custom.enforcement (deny, warn or dryrun), title and
// description. Policies cannot reach the network (see Capabilities).
package policies

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
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
	sem     chan struct{}
	metrics *Metrics
	set     atomic.Pointer[policySet]

	loadMu     sync.Mutex
	version    uint64
	failedHash string
	lastErr    atomic.Pointer[error]
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
	if o.Resync == 0 {
		o.Resync = DefaultResync
	}
	m, err := NewMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("registering policy metrics: %w", err)
	}
	return &Engine{opts: o, sem: make(chan struct{}, o.MaxConcurrent), metrics: m}, nil
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

// empty reports whether a set is loaded and holds no policy: requests need no
// input then.
func (e *Engine) empty() bool {
	s := e.set.Load()
	return s != nil && len(s.policies) == 0
}

// policySet is one compiled version of the policy directory with its queries
// prepared. It is never modified after it is swapped in.
type policySet struct {
	version  uint64
	hash     string
	policies []*Policy
	compiled *compiled
	// all evaluates every policy in one query: the fast path.
	all rego.PreparedEvalQuery
	// each evaluates one policy, prepared on first use: when the combined query
	// fails, it tells which policy failed and keeps the others' results.
	each []*lazyQuery
}

type lazyQuery struct {
	once sync.Once
	pq   rego.PreparedEvalQuery
	err  error
}

// resultVar is the query variable holding [[deny, warn], ...], one pair per policy.
const resultVar = "result"

// ruleSet is the query expression for one rule's results: a set comprehension, so
// that a package without the rule, or whose rule is undefined, yields an empty set.
func ruleSet(p *Policy, rule string, has bool) string {
	if !has {
		return "set()"
	}
	return "{x | x := " + p.path.String() + "." + rule + "[_]}"
}

func pairQuery(p *Policy) string {
	return "[" + ruleSet(p, denyRule, p.HasDeny) + ", " + ruleSet(p, warnRule, p.HasWarn) + "]"
}

func queryFor(policies []*Policy) string {
	var b strings.Builder
	b.WriteString(resultVar + " := [")
	for i, p := range policies {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pairQuery(p))
	}
	b.WriteString("]")
	return b.String()
}

// asTerm keeps evaluation results as AST terms: they are read once, so converting
// them to Go values first would only allocate.
func asTerm(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }

// prepare compiles a query against the set once. The capabilities and strict
// built-in errors are given again here: the query is compiled by its own compiler,
// and a built-in that fails (to_number("x")) must be an evaluation error that
// policies.onError handles, not a silently undefined rule that lets the request
// through.
func prepare(ctx context.Context, c *compiled, query string) (rego.PreparedEvalQuery, error) {
	body, err := ast.ParseBodyWithOpts(query, ast.ParserOptions{RegoVersion: regoVersion})
	if err != nil {
		return rego.PreparedEvalQuery{}, fmt.Errorf("internal error: parsing the evaluation query: %w", err)
	}
	return rego.New(
		rego.ParsedQuery(body),
		rego.Compiler(c.compiler),
		rego.Store(c.store),
		rego.Capabilities(Capabilities()),
		rego.StrictBuiltinErrors(true),
		rego.SetRegoVersion(regoVersion),
		rego.GenerateJSON(asTerm),
	).PrepareForEval(ctx)
}

// buildSet compiles a snapshot and prepares its combined query.
func buildSet(ctx context.Context, dir string, snap *snapshot) (*policySet, error) {
	c, err := compileSnapshot(ctx, dir, snap)
	if err != nil {
		return nil, err
	}
	policies, err := discover(dir, c)
	if err != nil {
		return nil, err
	}
	s := &policySet{hash: snap.hash, policies: policies, compiled: c, each: make([]*lazyQuery, len(policies))}
	for i := range s.each {
		s.each[i] = &lazyQuery{}
	}
	if len(policies) > 0 {
		if s.all, err = prepare(ctx, c, queryFor(policies)); err != nil {
			return nil, &LoadError{Dir: dir, Problems: problems(dir, err)}
		}
	}
	return s, nil
}

// single is policy i's own query. It is prepared without the request's context:
// the result is kept for every later request, so a request cancelled while
// preparing must not leave a cancelled query behind.
func (s *policySet) single(i int) (rego.PreparedEvalQuery, error) {
	q := s.each[i]
	q.once.Do(func() {
		q.pq, q.err = prepare(context.Background(), s.compiled, resultVar+" := ["+pairQuery(s.policies[i])+"]")
	})
	return q.pq, q.err
}

// Load reads and compiles the policy directory once and swaps the new set in. A
// set that fails to read, parse or compile is refused: the previous set (if any)
// keeps serving, the error is logged with file and line, counted, and returned.
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
	set, err := buildSet(ctx, dir, snap)
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
	var le *LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			e.opts.Logger.Error(errors.New(p.Message), "policy set refused; the previous set keeps serving",
				"dir", le.Dir, "file", p.File, "line", p.Line, "servingVersion", serving)
		}
	} else {
		e.opts.Logger.Error(err, "policy set refused; the previous set keeps serving", "dir", e.opts.Directory, "servingVersion", serving)
	}
	return err
}

// Finding is one result of one policy rule.
type Finding struct {
	Policy *Policy
	// Rule is deny or warn.
	Rule string
	// Message is the rule's msg (the policy's title when it is empty).
	Message string
	// Field is the field the result names (its "field", in field.Path's form or
	// with a quoted key), or nil.
	Field *field.Path
	// Enforcement is what the finding does: the policy's enforcement for deny
	// results, warn for warn results, dryrun for both under a dryrun policy.
	Enforcement admission.Enforcement
}

// Failure is a policy, or the whole set, that could not be evaluated for a request.
type Failure struct {
	// Policy is the failing policy, or nil when the set as a whole could not be
	// evaluated (deadline, no slot, nothing loaded, unreadable workload).
	Policy *Policy
	// Reason is short and safe to show a user: no stack, no input values.
	Reason string
	// Code is the metric reason (evaluation, deadline, no_slot, ...).
	Code string
	// Err is the underlying error, for logs.
	Err error
}

// PolicyID is the failing policy's id, or "" for the whole set.
func (f Failure) PolicyID() string {
	if f.Policy == nil {
		return ""
	}
	return f.Policy.ID
}

// Result is what the policy set said about one request.
type Result struct {
	Findings []Finding
	Failures []Failure
}

// Evaluate runs every policy of the serving set on one input, within ctx, the
// engine's timeout and its concurrency bound. It never returns an error: failures
// are part of the Result, so that the caller applies policies.onError to them and
// the healthy policies' findings are still reported.
func (e *Engine) Evaluate(ctx context.Context, input ast.Value) *Result {
	start := time.Now()
	res := e.evaluate(ctx, input)
	e.observe(res, start)
	return res
}

func (e *Engine) observe(res *Result, start time.Time) {
	outcome := "ok"
	if len(res.Failures) > 0 {
		outcome = "error"
	}
	e.metrics.Duration.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	for _, f := range res.Findings {
		e.metrics.Violations.WithLabelValues(f.Policy.ID, string(f.Enforcement)).Inc()
	}
	for _, f := range res.Failures {
		e.metrics.Errors.WithLabelValues(f.Code).Inc()
	}
}

// inputFailure is the Result for a request whose input could not be built.
func (e *Engine) inputFailure(err error) *Result {
	res := &Result{Failures: []Failure{{Reason: "cannot read the workload: " + shorten(err.Error()), Code: reasonInput, Err: err}}}
	e.observe(res, time.Now())
	return res
}

func (e *Engine) evaluate(ctx context.Context, input ast.Value) *Result {
	set := e.set.Load()
	if set == nil {
		return &Result{Failures: []Failure{{Reason: "no policy set has been loaded from " + e.opts.Directory + " yet",
			Code: reasonNotLoaded, Err: errors.New("no policy set loaded")}}}
	}
	if len(set.policies) == 0 {
		return &Result{}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	select {
	case e.sem <- struct{}{}:
	default:
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			return &Result{Failures: []Failure{e.contextFailure(ctx, start, true)}}
		}
	}
	defer func() { <-e.sem }()

	rs, err := set.all.Eval(ctx, rego.EvalParsedInput(input))
	if err == nil {
		res := &Result{}
		decode(res, set.policies, rs)
		return res
	}
	if topdown.IsCancel(err) || ctx.Err() != nil {
		return &Result{Failures: []Failure{e.contextFailure(ctx, start, false)}}
	}
	// Some policy failed. Evaluate them one by one: this names the failing
	// policy, and the healthy ones still count (under onError=allow a broken
	// policy must not switch the others off).
	res := &Result{}
	for i, p := range set.policies {
		pq, err := set.single(i)
		if err != nil {
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: shorten(err.Error()), Code: reasonEvaluation, Err: err})
			continue
		}
		rs, err := pq.Eval(ctx, rego.EvalParsedInput(input))
		if err != nil {
			if topdown.IsCancel(err) || ctx.Err() != nil {
				res.Failures = append(res.Failures, e.contextFailure(ctx, start, false))
				return res
			}
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: evalReason(err), Code: reasonEvaluation, Err: err})
			continue
		}
		decode(res, set.policies[i:i+1], rs)
	}
	return res
}

// contextFailure explains why the context ended. The request's own deadline may
// be shorter than the engine's timeout, so the time actually spent is reported.
func (e *Engine) contextFailure(ctx context.Context, start time.Time, waiting bool) Failure {
	err := ctx.Err()
	spent := time.Since(start).Round(time.Millisecond)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && waiting:
		return Failure{Reason: fmt.Sprintf("no evaluation slot became free within %s (%d evaluations already running)",
			spent, cap(e.sem)), Code: reasonNoSlot, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return Failure{Reason: fmt.Sprintf("evaluation did not finish within %s (deadline %s)", spent, e.opts.Timeout),
			Code: reasonDeadline, Err: err}
	}
	return Failure{Reason: "the request was cancelled during evaluation", Code: reasonCancelled, Err: err}
}

// evalReason is an evaluation error in one line: OPA's code and message, and the
// policy file and line, without OPA's stack.
func evalReason(err error) string {
	var te *topdown.Error
	if errors.As(err, &te) {
		msg := te.Code + ": " + te.Message
		if te.Location != nil {
			msg += fmt.Sprintf(" (%s:%d)", filepath.Base(te.Location.File), te.Location.Row)
		}
		return shorten(msg)
	}
	return shorten(err.Error())
}

// maxReason keeps failure reasons to one readable line.
const maxReason = 200

func shorten(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncate(s, maxReason)
}

// truncate cuts s to at most n bytes, ending in "...", without splitting a
// UTF-8 character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// decode reads [[deny, warn], ...] for the given policies into res. A policy whose
// results are malformed is a failure of that policy.
func decode(res *Result, policies []*Policy, rs rego.ResultSet) {
	if len(rs) == 0 {
		for _, p := range policies {
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: "internal error: the evaluation query was undefined",
				Code: reasonEvaluation, Err: errors.New("undefined result")})
		}
		return
	}
	t, _ := rs[0].Bindings[resultVar].(*ast.Term)
	var pairs *ast.Array
	if t != nil {
		pairs, _ = t.Value.(*ast.Array)
	}
	for i, p := range policies {
		var pair *ast.Array
		if pairs != nil && i < pairs.Len() {
			pair, _ = pairs.Elem(i).Value.(*ast.Array)
		}
		if pair == nil || pair.Len() != 2 {
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: "internal error: unexpected evaluation result",
				Code: reasonEvaluation, Err: errors.New("unexpected result shape")})
			continue
		}
		var found []Finding
		var bad error
		for j, rule := range []string{denyRule, warnRule} {
			s, ok := pair.Elem(j).Value.(ast.Set)
			if !ok {
				bad = fmt.Errorf("%s is not a set", rule)
				break
			}
			sorted := s.Sorted()
			for k := range sorted.Len() {
				f, err := finding(p, rule, sorted.Elem(k))
				if err != nil {
					bad = err
					break
				}
				found = append(found, f)
			}
			if bad != nil {
				break
			}
		}
		if bad != nil {
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: shorten(bad.Error()), Code: reasonEvaluation, Err: bad})
			continue
		}
		res.Findings = append(res.Findings, found...)
	}
}

var (
	msgKey   = ast.StringTerm("msg")
	fieldKey = ast.StringTerm("field")
)

// finding reads one element of a deny or warn set: a string, or an object with a
// string msg and an optional string field.
func finding(p *Policy, rule string, t *ast.Term) (Finding, error) {
	f := Finding{Policy: p, Rule: rule, Enforcement: effectiveEnforcement(rule, p.Enforcement)}
	switch v := t.Value.(type) {
	case ast.String:
		f.Message = string(v)
	case ast.Object:
		m := v.Get(msgKey)
		if m == nil {
			return f, fmt.Errorf("%s result %v has no msg", rule, shortTerm(t))
		}
		s, ok := m.Value.(ast.String)
		if !ok {
			return f, fmt.Errorf("%s result msg %v is not a string", rule, shortTerm(m))
		}
		f.Message = string(s)
		if fv := v.Get(fieldKey); fv != nil {
			fs, ok := fv.Value.(ast.String)
			if !ok {
				return f, fmt.Errorf("%s result field %v is not a string", rule, shortTerm(fv))
			}
			f.Field = fieldpath.Parse(string(fs))
		}
	default:
		return f, fmt.Errorf("%s results must be strings or objects with msg, got %s %v", rule, ast.ValueName(v), shortTerm(t))
	}
	if f.Message == "" {
		f.Message = p.Title
		if f.Message == "" {
			f.Message = "violated"
		}
	}
	return f, nil
}

func shortTerm(t *ast.Term) string { return truncate(t.String(), 60) }

// effectiveEnforcement combines the rule with the policy's enforcement: warn
// results only ever warn, and a dryrun policy never changes a response.
func effectiveEnforcement(rule string, policy admission.Enforcement) admission.Enforcement {
	switch {
	case policy == admission.EnforcementDryRun:
		return admission.EnforcementDryRun
	case rule == warnRule:
		return admission.EnforcementWarn
	}
	return policy
}
