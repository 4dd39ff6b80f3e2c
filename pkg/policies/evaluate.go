package policies

import (
	"context"
	"errors"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Result is what the policy set said about one request.
type Result struct {
	Findings []Finding
	Failures []Failure
}

// Plan is the policies of one serving set that apply to one request, chosen by
// their custom.match: a request no policy applies to is never evaluated, and
// policies that do not apply cost it nothing.
type Plan struct {
	engine *Engine
	set    *policySet
	// indices are the applying policies' places in set.policies; nil with a
	// nil subject means every policy.
	indices []int
	query   *rego.PreparedEvalQuery
	// sub is the request the plan is for (nil: every policy).
	sub *Subject
}

// Plan chooses the serving set's policies for a request. A nil subject selects
// every policy. Before the first load the plan is not empty: its evaluation is
// the "not loaded" failure, which policies.onError decides.
func (e *Engine) Plan(sub *Subject) *Plan { return e.planFor(e.set.Load(), sub) }

// planFor is Plan over a given set: the serving one, or a new one on trial.
func (e *Engine) planFor(set *policySet, sub *Subject) *Plan {
	p := &Plan{engine: e, set: set, sub: sub}
	if set == nil {
		return p
	}
	if sub == nil {
		p.indices, p.query = allIndices(len(set.policies)), &set.all
		return p
	}
	g := set.groups[groupKey{kind: sub.Kind, op: sub.Operation}]
	if g == nil {
		// Not a catalog kind: the policy step never sends one, but a caller
		// that does gets the policies without a kinds match.
		g = &group{}
		for i, pol := range set.policies {
			if pol.Match.static(sub.Kind, sub.Operation) {
				g.indices = append(g.indices, i)
			}
		}
		g.dynamic = true
	}
	if !g.dynamic {
		p.indices, p.query = g.indices, g.query
		return p
	}
	for _, i := range g.indices {
		if set.policies[i].Match.dynamic(sub) {
			p.indices = append(p.indices, i)
		}
	}
	if len(p.indices) == len(g.indices) {
		p.query = g.query
	}
	return p
}

func allIndices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Empty reports whether no policy applies: the request needs no input.
func (p *Plan) Empty() bool { return p.set != nil && len(p.indices) == 0 }

// Policies are the policies the plan evaluates, in id order.
func (p *Plan) Policies() []*Policy {
	if p.set == nil {
		return nil
	}
	return pick(p.set.policies, p.indices)
}

// Evaluate runs every policy of the serving set on one input, within ctx, the
// engine's timeout and its concurrency bound. It never returns an error: failures
// are part of the Result, so that the caller applies policies.onError to them and
// the healthy policies' findings are still reported.
func (e *Engine) Evaluate(ctx context.Context, input ast.Value) *Result {
	return e.Plan(nil).Evaluate(ctx, input)
}

// Evaluate runs the plan's policies on one input, as Engine.Evaluate does.
func (p *Plan) Evaluate(ctx context.Context, input ast.Value) *Result {
	start := time.Now()
	res := p.evaluate(ctx, input)
	p.engine.observe(res, start)
	if len(res.Failures) == 0 && !p.Empty() && p.set != nil {
		p.engine.recent.record(p.sub, input)
	}
	return res
}

func (e *Engine) observe(res *Result, start time.Time) {
	took := time.Since(start).Seconds()
	if len(res.Failures) > 0 {
		e.metrics.durationError.Observe(took)
	} else {
		e.metrics.durationOK.Observe(took)
	}
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

func (p *Plan) evaluate(ctx context.Context, input ast.Value) *Result {
	e, set := p.engine, p.set
	if set == nil {
		return notLoaded(e)
	}
	if len(p.indices) == 0 {
		return &Result{}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	release, failure := e.acquire(ctx, p.sub, start)
	if failure != nil {
		return &Result{Failures: []Failure{*failure}}
	}
	defer release()
	return p.evalInSlot(ctx, input, start)
}

// EvaluateBuilt is Evaluate on an input that build makes once the request holds
// an evaluation slot: the summary and the input (several times the object's
// size in memory) are then bounded by the slots, not by the requests in
// flight. build is given the parts of the input the set reads (nil: all of
// it); an error from it is the "cannot read the workload" failure. An input
// the set has judged before gets the same answer without an evaluation.
// kept, when the canary keeps the request, returns what builds its whole
// input again from what it keeps (nil: the request is not kept).
func (p *Plan) EvaluateBuilt(ctx context.Context, build func(paths *InputPaths) (ast.Value, error),
	kept func() func() (ast.Value, error)) *Result {
	e := p.engine
	if p.set == nil || len(p.indices) == 0 {
		return p.Evaluate(ctx, nil)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	release, failure := e.acquire(ctx, p.sub, start)
	if failure != nil {
		res := &Result{Failures: []Failure{*failure}}
		e.observe(res, start)
		return res
	}
	defer release()
	input, err := build(p.set.facts.paths)
	if err != nil {
		return e.inputFailure(err)
	}
	query := p.combined()
	res, l, ok := p.set.decisions.get(query, input)
	defer l.release()
	if ok {
		e.metrics.decisionHits.Inc()
		e.observe(res, start)
		return res
	}
	res = p.evalInSlot(ctx, input, start)
	e.observe(res, start)
	if len(res.Failures) == 0 {
		if p.set.decisions != nil && query != nil {
			e.metrics.decisionMisses.Inc()
			p.set.decisions.put(l, res)
		}
		// A new set may read what this one does not: it is tried on the
		// whole input, built again only then.
		if kept != nil {
			e.recent.recordBuilder(p.sub, kept)
		}
	}
	return res
}

func notLoaded(e *Engine) *Result {
	return &Result{Failures: []Failure{{Reason: "no policy set has been loaded from " + e.opts.Directory + " yet",
		Code: reasonNotLoaded, Err: errors.New("no policy set loaded")}}}
}

// acquire takes an evaluation slot for the request's namespace within ctx
// (slots shares them fairly between namespaces); the failure says why it
// could not.
func (e *Engine) acquire(ctx context.Context, sub *Subject, start time.Time) (release func(), failure *Failure) {
	key := ""
	if sub != nil {
		key = sub.Namespace
	}
	if isBackground(ctx) {
		key = backgroundKey
	}
	if !e.slots.acquire(ctx, key) {
		f := e.contextFailure(ctx, start, true)
		return nil, &f
	}
	return func() { e.slots.release(key) }, nil
}

// combined is the query evaluating all the plan's policies at once: its
// group's, or one prepared for this subset on first use; nil when the set
// keeps no more subsets (they are then evaluated one by one).
func (p *Plan) combined() *rego.PreparedEvalQuery {
	if p.query != nil {
		return p.query
	}
	if q, ok := p.set.subset(p.indices); ok && q.err == nil {
		return &q.pq
	}
	return nil
}

// evalInSlot evaluates the plan's policies on input; the caller holds a slot.
func (p *Plan) evalInSlot(ctx context.Context, input ast.Value, start time.Time) *Result {
	e, set := p.engine, p.set
	cache := getRefCache()
	defer putRefCache(cache)
	cache.consts = set.consts
	// OPA watches a context that can be cancelled with a goroutine of its
	// own per evaluation, which costs each request a goroutine's start and
	// two wake-ups; a flag set at the deadline by context.AfterFunc costs none
	// until then.
	cancel := topdown.NewCancel()
	defer context.AfterFunc(ctx, cancel.Cancel)()
	// Each evaluation its own rule cache: OPA's, in tests, is made anew.
	opts := func() []rego.EvalOption {
		return []rego.EvalOption{noMetrics, rego.EvalExternalCancel(cancel), rego.EvalParsedInput(input), e.ruleCache(cache)}
	}
	if query := p.combined(); query != nil {
		rs, err := query.Eval(ctx, opts()...)
		if err == nil {
			res := &Result{}
			decode(res, pick(set.policies, p.indices), rs)
			return res
		}
		if topdown.IsCancel(err) || ctx.Err() != nil {
			return &Result{Failures: []Failure{e.contextFailure(ctx, start, false)}}
		}
	}
	// Some policy failed, or this part of the set has no combined query.
	// Evaluate them one by one: this names the failing policy, and the healthy
	// ones still count (under onError=allow a broken policy must not switch the
	// others off).
	res := &Result{}
	for _, i := range p.indices {
		pol := set.policies[i]
		pq, err := set.single(i)
		if err != nil {
			res.Failures = append(res.Failures, Failure{Policy: pol, Reason: shorten(err.Error()), Code: reasonEvaluation, Err: err})
			continue
		}
		cache.reset()
		rs, err := pq.Eval(ctx, opts()...)
		if err != nil {
			if topdown.IsCancel(err) || ctx.Err() != nil {
				res.Failures = append(res.Failures, e.contextFailure(ctx, start, false))
				return res
			}
			res.Failures = append(res.Failures, Failure{Policy: pol, Reason: evalReason(err), Code: reasonEvaluation, Err: err})
			continue
		}
		decode(res, set.policies[i:i+1], rs)
	}
	return res
}

// ruleCache is the evaluation option of the rule cache: cache, emptied by
// the caller, or OPA's own for a reference evaluation in tests.
func (e *Engine) ruleCache(cache *refCache) rego.EvalOption {
	if e.opaCache {
		return rego.EvalVirtualCache(topdown.NewVirtualCache())
	}
	return rego.EvalVirtualCache(cache)
}

// noMetrics spares each evaluation OPA's metrics, which nothing reads: the
// engine times evaluations itself.
var noMetrics = rego.EvalMetrics(metrics.NoOp())

type backgroundKeyType struct{}

// Background marks evaluations under ctx as background work (the audit): they
// take an evaluation slot only when no admission request waits for one, and
// never more than half the slots, so that they cannot slow admission down.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKeyType{}, true)
}

func isBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKeyType{}).(bool)
	return b
}
