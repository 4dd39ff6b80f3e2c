package policies

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// InputPaths is what a policy set can read of its input, found in its compiled
// modules when it loads: every reference rooted at input, up to its first part
// that is not a constant string (input.workload.totalRequests[r] reads all of
// totalRequests). The request's input is built with only these parts, and the
// decision cache keys on them, so that what no policy reads (an object's name
// and uid, its status, a user's groups) neither costs a conversion nor tells
// two requests apart. A nil *InputPaths reads everything.
type InputPaths struct {
	// all is true when the whole value at this path is read.
	all      bool
	children map[string]*InputPaths
}

// reads reports whether anything at or under key is read.
func (p *InputPaths) reads(key string) bool {
	return p == nil || p.all || p.children[key] != nil
}

// child is the paths read under key; nil (everything) when this one is read whole.
func (p *InputPaths) child(key string) *InputPaths {
	if p == nil || p.all {
		return nil
	}
	return p.children[key]
}

func (p *InputPaths) add(path []string) {
	for _, key := range path {
		if p.all {
			return
		}
		if p.children == nil {
			p.children = map[string]*InputPaths{}
		}
		next := p.children[key]
		if next == nil {
			next = &InputPaths{}
			p.children[key] = next
		}
		p = next
	}
	p.all, p.children = true, nil
}

// setFacts are what the analysis of a compiled set found.
type setFacts struct {
	// paths are the input paths the set reads; nil when it reads input in a
	// way the analysis cannot bound (input as a whole, a computed key, a with
	// modifier on input): then every request gets the whole input.
	paths *InputPaths
	// deterministic is false when some rule calls a built-in whose result may
	// differ between two evaluations of one input (time.now_ns, rand.intn,
	// http.send, ...): its decisions are never reused.
	deterministic bool
}

// analyze reads the serving modules of a compiled set (tests are never loaded
// to serve).
func analyze(modules map[string]*ast.Module) setFacts {
	paths, bounded, deterministic := &InputPaths{}, true, true
	for _, m := range modules {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if !r[0].Equal(ast.InputRootDocument) {
				return false
			}
			path := make([]string, 0, len(r)-1)
			for _, t := range r[1:] {
				s, ok := t.Value.(ast.String)
				if !ok {
					break
				}
				path = append(path, string(s))
			}
			if len(path) == 0 {
				bounded = false
			}
			paths.add(path)
			return false
		})
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			for _, w := range e.With {
				if w.Target.Value.(ast.Ref)[0].Equal(ast.InputRootDocument) {
					bounded = false
				}
			}
			if e.IsCall() && nondeterministic(e.Operator()) {
				deterministic = false
			}
			return false
		})
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if call, ok := t.Value.(ast.Call); ok && nondeterministic(call[0].Value.(ast.Ref)) {
				deterministic = false
			}
			return false
		})
	}
	if !bounded {
		paths = nil
	}
	return setFacts{paths: paths, deterministic: deterministic}
}

func nondeterministic(op ast.Ref) bool {
	b, ok := ast.BuiltinMap[op.String()]
	return ok && b.Nondeterministic
}

// projectTerm keeps only the read parts of an object term; a term read whole,
// or not an object, is returned as it is.
func projectTerm(t *ast.Term, p *InputPaths) *ast.Term {
	obj, ok := t.Value.(ast.Object)
	if p == nil || p.all || !ok {
		return t
	}
	out := make([][2]*ast.Term, 0, len(p.children))
	for k, child := range p.children {
		if v := obj.Get(keyTerm(k)); v != nil {
			out = append(out, [2]*ast.Term{keyTerm(k), projectTerm(v, child)})
		}
	}
	return ast.ObjectTerm(out...)
}

// projectValue converts the read parts of a decoded JSON value (an
// unstructured object's content) to an OPA value: an object's unread keys are
// never converted.
func projectValue(v any, p *InputPaths) (ast.Value, error) {
	m, ok := v.(map[string]any)
	if p == nil || p.all || !ok {
		return ast.InterfaceToValue(v)
	}
	out := make([][2]*ast.Term, 0, len(p.children))
	for k, child := range p.children {
		sub, ok := m[k]
		if !ok {
			continue
		}
		val, err := projectValue(sub, child)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]*ast.Term{keyTerm(k), ast.NewTerm(val)})
	}
	return ast.NewObject(out...), nil
}
