package policies

import (
	"context"
	"errors"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

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
