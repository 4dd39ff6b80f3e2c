package policies

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// policySet is one compiled version of the policy directory with its queries
// prepared. It is never modified after it is swapped in, but for the caches of
// queries prepared on first use.
type policySet struct {
	version  uint64
	hash     string
	policies []*Policy
	compiled *compiled
	// all evaluates every policy in one query: for a request without a subject.
	all rego.PreparedEvalQuery
	// groups index the policies by what is known when the set loads: for each
	// catalog kind and operation, the policies whose custom.match kinds and
	// operations hold, with their combined query prepared.
	groups map[groupKey]*group
	// each evaluates one policy, prepared on first use: when the combined query
	// fails, it tells which policy failed and keeps the others' results.
	each []*lazyQuery
	// subsets are combined queries of the part of a group a request's
	// namespace and labels select, prepared on first use, at most maxSubsets.
	subsetMu sync.Mutex
	subsets  map[string]*lazyQuery
	// facts are what the set reads of its input and whether its answers
	// may be reused; decisions reuses them (nil: never).
	facts     setFacts
	decisions *decisionCache
	// consts are the values of the rules no request changes: a rule that
	// reads the clock is not one, whatever the rest of the set does.
	consts *constants
}

// maxSubsets bounds the subset queries a set keeps. Beyond it, a request whose
// namespace or labels select an uncached part of a group evaluates that part
// policy by policy: correct, only slower.
var maxSubsets = 256

type groupKey struct {
	kind schema.GroupKind
	op   admissionv1.Operation
}

// group is the policies that apply to one kind and operation, in set order.
type group struct {
	indices []int
	// dynamic reports whether some policy of the group also matches by
	// namespace or labels.
	dynamic bool
	// query evaluates the whole group; nil when it has no policy.
	query *rego.PreparedEvalQuery
}

type lazyQuery struct {
	once sync.Once
	pq   rego.PreparedEvalQuery
	err  error
}

// resultVar is the query variable holding [[deny, warn], ...], one pair per policy.
const resultVar = "result"

// ruleSet is the query expression for one rule's results: the rule itself when
// only multi-value rules define it (always a set), else a set comprehension, so
// that a package without the rule, or whose rule is undefined, yields an empty set.
func ruleSet(p *Policy, rule string, has, direct bool) string {
	switch {
	case !has:
		return "set()"
	case direct:
		return p.path.String() + "." + rule
	}
	return "{x | x := " + p.path.String() + "." + rule + "[_]}"
}

func pairQuery(p *Policy) string {
	return "[" + ruleSet(p, denyRule, p.HasDeny, p.denyDirect) + ", " + ruleSet(p, warnRule, p.HasWarn, p.warnDirect) + "]"
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
		rego.Capabilities(c.caps),
		rego.StrictBuiltinErrors(true),
		rego.SetRegoVersion(regoVersion),
		rego.GenerateJSON(asTerm),
	).PrepareForEval(ctx)
}

// buildSet compiles a snapshot and prepares its combined query.
// Each constant rule gets timeout, a request's evaluation bound, to be
// evaluated in.
func buildSet(ctx context.Context, dir string, snap *snapshot, caps *ast.Capabilities, cacheSize int, timeout time.Duration) (*policySet, error) {
	c, err := compileSnapshot(ctx, dir, snap, caps)
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
	if s.groups, err = buildGroups(ctx, policies, c, s.all); err != nil {
		return nil, &LoadError{Dir: dir, Problems: problems(dir, err)}
	}
	s.subsets = map[string]*lazyQuery{}
	s.facts = analyze(c.compiler, entryRules(c.compiler, policies))
	if s.facts.deterministic {
		s.decisions = newDecisionCache(cacheSize)
	}
	s.consts = evalConstants(ctx, c, constantRules(c.compiler), timeout)
	return s, nil
}

// buildGroups indexes the policies by every catalog kind and judged operation.
// Keys with the same policies share one group and one prepared query; the group
// of every policy reuses the set's combined query.
func buildGroups(ctx context.Context, policies []*Policy, c *compiled, all rego.PreparedEvalQuery) (map[groupKey]*group, error) {
	out := map[groupKey]*group{}
	bySignature := map[string]*group{}
	for _, in := range integrations.All() {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			key := groupKey{kind: in.GVK.GroupKind(), op: op}
			var indices []int
			for i, p := range policies {
				if p.Match.static(key.kind, op) {
					indices = append(indices, i)
				}
			}
			sig := signature(indices)
			g := bySignature[sig]
			if g == nil {
				g = &group{indices: indices}
				for _, i := range indices {
					g.dynamic = g.dynamic || policies[i].Match.hasDynamic()
				}
				switch {
				case len(indices) == 0:
				case len(indices) == len(policies):
					g.query = &all
				default:
					q, err := prepare(ctx, c, queryFor(pick(policies, indices)))
					if err != nil {
						return nil, err
					}
					g.query = &q
				}
				bySignature[sig] = g
			}
			out[key] = g
		}
	}
	return out, nil
}

// signature names a list of policy indices, as a cache key.
func signature(indices []int) string {
	var b strings.Builder
	for i, n := range indices {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

func pick(policies []*Policy, indices []int) []*Policy {
	out := make([]*Policy, len(indices))
	for i, n := range indices {
		out[i] = policies[n]
	}
	return out
}

// subset is the combined query of some policies, prepared on first use; ok is
// false when the cache is full and the caller must evaluate them one by one.
func (s *policySet) subset(indices []int) (q *lazyQuery, ok bool) {
	sig := signature(indices)
	s.subsetMu.Lock()
	q = s.subsets[sig]
	if q == nil && len(s.subsets) < maxSubsets {
		q = &lazyQuery{}
		s.subsets[sig] = q
	}
	s.subsetMu.Unlock()
	if q == nil {
		return nil, false
	}
	q.once.Do(func() {
		q.pq, q.err = prepare(context.Background(), s.compiled, queryFor(pick(s.policies, indices)))
	})
	return q, true
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
