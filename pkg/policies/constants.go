package policies

import (
	"context"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// constants are the values of a set's input-independent rules, evaluated once
// when the set loads: settings read from data (lib.settings, gpu_resources,
// the prefixes built from them) would otherwise be rebuilt by every
// evaluation, a third of what a request's max-gpus-per-workload costs
// (BenchmarkShippedPolicyEvaluation). Each evaluation's rule cache answers them
// (refCache.Get), where OPA would look its own result up.
type constants struct {
	byHash map[int][]constant
}

type constant struct {
	ref   ast.Ref
	value *ast.Term // nil: the rule is undefined
}

// lookup is ref's value, whether it is undefined, and whether ref is a constant.
func (c *constants) lookup(ref ast.Ref, hash int) (value *ast.Term, undefined, ok bool) {
	if c == nil {
		return nil, false, false
	}
	for _, k := range c.byHash[hash] {
		if k.ref.Equal(ref) {
			return k.value, k.value == nil, true
		}
	}
	return nil, false, false
}

// contextual built-ins answer differently where they are called from (the
// rule chain) or do something each time they run (print, trace): a rule
// calling one is evaluated per request.
var contextual = map[string]bool{
	"rego.metadata.chain": true, "rego.metadata.rule": true,
	"print": true, "internal.print": true, "trace": true, "internal.test_case": true,
}

// constantRules are the paths of the complete rules (one value, no
// arguments) whose value depends on no request: no rule they reach reads
// input, uses a with modifier, or calls a contextual or non-deterministic
// built-in.
func constantRules(c *ast.Compiler) []ast.Ref {
	a := &constness{compiler: c, memo: map[*ast.Rule]bool{}}
	seen := map[string]bool{}
	var out []ast.Ref
	for _, m := range c.Modules {
		for _, r := range m.Rules {
			path := r.Ref()
			if !path.IsGround() || len(r.Head.Args) > 0 || r.Head.RuleKind() != ast.SingleValue || seen[path.String()] {
				continue
			}
			seen[path.String()] = true
			if a.rules(c.GetRulesExact(path)) {
				out = append(out, path)
			}
		}
	}
	return out
}

// constness decides whether rules depend on a request, once per rule.
type constness struct {
	compiler *ast.Compiler
	memo     map[*ast.Rule]bool
}

func (a *constness) rules(rules []*ast.Rule) bool {
	if len(rules) == 0 {
		return true
	}
	for _, r := range rules {
		for ; r != nil; r = r.Else {
			if !a.rule(r) {
				return false
			}
		}
	}
	return true
}

func (a *constness) rule(r *ast.Rule) bool {
	if v, ok := a.memo[r]; ok {
		return v
	}
	a.memo[r] = false // a cycle (Rego has none once compiled) reads as a dependence
	ok := a.independent(r)
	a.memo[r] = ok
	return ok
}

// independent reports whether nothing in r reads the request: every
// reference into data reaches only base documents (fixed for the set) and
// independent rules.
func (a *constness) independent(r *ast.Rule) bool {
	if callsAny(r, func(op ast.Ref) bool { return contextual[op.String()] || nondeterministic(op) }) {
		return false
	}
	ok := true
	ast.WalkExprs(r, func(e *ast.Expr) bool {
		ok = ok && len(e.With) == 0
		return !ok
	})
	ast.WalkTerms(r, func(t *ast.Term) bool {
		switch v := t.Value.(type) {
		case ast.Var:
			ok = ok && !v.Equal(ast.InputRootDocument.Value)
		case ast.Ref:
			switch {
			case v.HasPrefix(ast.InputRootRef):
				ok = false
			case v.HasPrefix(ast.DefaultRootRef):
				ok = ok && a.rules(a.compiler.GetRulesDynamicWithOpts(v, ast.RulesOptions{IncludeHiddenModules: true}))
			}
		}
		return !ok
	})
	return ok
}

// evalConstants evaluates the set's constant rules once, each within
// timeout. A rule whose evaluation fails or does not finish in time is left
// out: each request evaluates it, and fails (or times out), as before, and a
// rule that never finishes cannot keep a set from loading.
func evalConstants(ctx context.Context, c *compiled, paths []ast.Ref, timeout time.Duration) *constants {
	out := &constants{byHash: map[int][]constant{}}
	for _, path := range paths {
		if k, ok := evalConstant(ctx, c, path, timeout); ok {
			h := path.Hash()
			out.byHash[h] = append(out.byHash[h], k)
		}
	}
	return out
}

// evalConstant is one constant rule's value; false when it cannot be kept.
func evalConstant(ctx context.Context, c *compiled, path ast.Ref, timeout time.Duration) (constant, bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pq, err := prepare(ctx, c, resultVar+" := "+path.String())
	if err != nil {
		return constant{}, false
	}
	rs, err := pq.Eval(ctx, noMetrics)
	if err != nil || len(rs) > 1 {
		return constant{}, false
	}
	k := constant{ref: path}
	if len(rs) == 1 {
		t, ok := rs[0].Bindings[resultVar].(*ast.Term)
		if !ok {
			return constant{}, false
		}
		k.value = t
	}
	return k, true
}
