package policies

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

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
