package policies

import (
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// InputPaths is what a policy set can read of its input, found in its compiled
// modules when it loads (readPaths): every reference rooted at input, followed
// through the variables and function parameters its values are bound to
// (`some pod in input.workload.podSpecs; pod.containers` reads
// workload.podSpecs[*].containers). The request's input is built with only
// these parts, and the decision cache keys on them, so that what no policy
// reads (an object's name and uid, its status, a user's groups, a container's
// environment) neither costs a conversion nor tells two requests apart. A nil
// *InputPaths reads everything.
type InputPaths struct {
	// all is true when the whole value at this path is read.
	all      bool
	children map[string]*InputPaths
	// key is this node's key under its parent as a term, made once when the
	// set loads: a request's object is projected without a lookup for it.
	key *ast.Term
	// each is what is read under every key or index (a variable's part), also
	// merged into each of children by seal.
	each *InputPaths
}

// reads reports whether anything at or under key is read.
func (p *InputPaths) reads(key string) bool {
	return p == nil || p.all || p.children[key] != nil || p.each != nil
}

// child is the paths read under key; nil (everything) when this one is read whole.
func (p *InputPaths) child(key string) *InputPaths {
	if p == nil || p.all {
		return nil
	}
	if c := p.children[key]; c != nil {
		return c
	}
	return p.each
}

func (p *InputPaths) add(path []string) {
	parts := make([]part, len(path))
	for i, k := range path {
		parts[i] = part{key: k}
	}
	p.addParts(parts)
}

func (p *InputPaths) addParts(path []part) {
	for _, k := range path {
		if p.all {
			return
		}
		p = p.next(k)
	}
	p.all, p.children, p.each = true, nil, nil
}

// present marks the value at path read for its type only: an object there is
// kept without the keys nothing else reads, an array without its elements.
func (p *InputPaths) present(path []part) {
	for _, k := range path {
		if p.all {
			return
		}
		p = p.next(k)
	}
}

// next is the node under k, made when missing.
func (p *InputPaths) next(k part) *InputPaths {
	if k.any {
		if p.each == nil {
			p.each = &InputPaths{}
		}
		return p.each
	}
	if p.children == nil {
		p.children = map[string]*InputPaths{}
	}
	c := p.children[k.key]
	if c == nil {
		c = &InputPaths{key: ast.StringTerm(k.key)}
		p.children[k.key] = c
	}
	return c
}

// merge adds everything o reads to p.
func (p *InputPaths) merge(o *InputPaths) {
	if p.all || o == nil {
		return
	}
	if o.all {
		p.all, p.children, p.each = true, nil, nil
		return
	}
	for k, c := range o.children {
		p.next(part{key: k}).merge(c)
	}
	if o.each != nil {
		p.next(part{any: true}).merge(o.each)
	}
}

// seal merges what is read under every key into each named key's paths, so
// that child(key) alone says what is read under key.
func (p *InputPaths) seal() {
	if p == nil || p.all {
		return
	}
	p.each.seal()
	for _, c := range p.children {
		c.merge(p.each)
		c.seal()
	}
}

// setFacts are what the analysis of a compiled set found.
type setFacts struct {
	// paths are the input paths the set reads; nil when it reads input in a
	// way the analysis cannot bound (input as a whole, a computed first key, a
	// with modifier on input): then every request gets the whole input.
	paths *InputPaths
	// deterministic is false when some rule calls a built-in whose result may
	// differ between two evaluations of one input (time.now_ns, rand.intn,
	// http.send, ...): its decisions are never reused.
	deterministic bool
}

// analyze reads what the rules roots may evaluate read of input: the
// policies' deny and warn rules and every rule they depend on (OPA's rule
// graph, where a reference through a variable depends on every rule it may
// select), so that a helper no policy calls (lib.rego's, for policies of the
// users' own) widens no request's input. Whether the set is deterministic is
// decided on every serving module (tests are never loaded to serve).
func analyze(c *ast.Compiler, roots []*ast.Rule) setFacts {
	deterministic := true
	for _, m := range c.Modules {
		deterministic = deterministic && !callsAny(m, nondeterministic)
	}
	reads := newReadPaths(c)
	for _, r := range reachable(c, roots) {
		if len(r.Head.Args) > 0 {
			reads.function(r.Ref().GroundPrefix())
		} else {
			reads.rule(r, nil)
		}
	}
	paths := reads.input
	if !reads.bounded {
		paths = nil
	}
	paths.seal()
	return setFacts{paths: paths, deterministic: deterministic}
}

// reachable are roots and the rules they depend on, every else branch
// included.
func reachable(c *ast.Compiler, roots []*ast.Rule) []*ast.Rule {
	stack := slices.Clone(roots)
	seen := map[*ast.Rule]bool{}
	var out []*ast.Rule
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if r == nil || seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, r)
		stack = append(stack, r.Else)
		for dep := range c.Graph.Dependencies(r) {
			if d, ok := dep.(*ast.Rule); ok {
				stack = append(stack, d)
			}
		}
	}
	return out
}

// entryRules are the rules a set's queries evaluate: each policy's deny and
// warn.
func entryRules(c *ast.Compiler, policies []*Policy) []*ast.Rule {
	var out []*ast.Rule
	for _, p := range policies {
		for _, name := range []string{denyRule, warnRule} {
			out = append(out, c.GetRulesExact(p.path.Append(ast.StringTerm(name)))...)
		}
	}
	return out
}

func nondeterministic(op ast.Ref) bool {
	b, ok := ast.BuiltinMap[op.String()]
	return ok && b.Nondeterministic
}

// callsAny reports whether x calls a function pred holds for: as an
// expression (f(x)) or as a term nested in one (y := f(x) + 1).
func callsAny(x any, pred func(op ast.Ref) bool) bool {
	found := false
	ast.WalkExprs(x, func(e *ast.Expr) bool {
		found = found || e.IsCall() && pred(e.Operator())
		return found
	})
	ast.WalkTerms(x, func(t *ast.Term) bool {
		if call, ok := t.Value.(ast.Call); ok && !found {
			op, isRef := call[0].Value.(ast.Ref)
			found = isRef && pred(op)
		}
		return found
	})
	return found
}

// projectTerm keeps only the read parts of a term: an object's read keys, an
// array's elements each projected when every element is read into; a term read
// whole, or any other, is returned as it is, and so is one the projection
// leaves unchanged (a pod set whose every field is read), without a copy.
func projectTerm(t *ast.Term, p *InputPaths) *ast.Term {
	if p == nil || p.all {
		return t
	}
	switch v := t.Value.(type) {
	case ast.Object:
		return projectObject(t, v, p)
	case *ast.Array:
		if p.each == nil {
			return ast.ArrayTerm()
		}
		var out []*ast.Term // made at the first element that changes
		for i := range v.Len() {
			e := v.Elem(i)
			pe := projectTerm(e, p.each)
			if pe != e && out == nil {
				out = make([]*ast.Term, i, v.Len())
				for j := range i {
					out[j] = v.Elem(j)
				}
			}
			if out != nil {
				out = append(out, pe)
			}
		}
		if out == nil {
			return t
		}
		return ast.ArrayTerm(out...)
	}
	return t
}

func projectObject(t *ast.Term, obj ast.Object, p *InputPaths) *ast.Term {
	out := getPairs()
	same := true
	obj.Foreach(func(k, e *ast.Term) {
		s, ok := k.Value.(ast.String)
		if !ok || !p.reads(string(s)) {
			same = false
			return
		}
		pe := projectTerm(e, p.child(string(s)))
		same = same && pe == e
		out.add(k, pe)
	})
	if same {
		out.release()
		return t
	}
	return ast.NewTerm(out.object())
}

// pairList is an object's pairs as they are gathered, from a pool:
// ast.NewObject copies them, so the list is reused by the next object.
type pairList struct{ s [][2]*ast.Term }

var pairLists = sync.Pool{New: func() any { return &pairList{} }}

// maxPooledPairs keeps a rare huge object's list (a thousand labels) out of
// the pool.
const maxPooledPairs = 256

func getPairs() *pairList { return pairLists.Get().(*pairList) }

func (l *pairList) add(k, v *ast.Term) { l.s = append(l.s, [2]*ast.Term{k, v}) }

// object is the pairs' object; the list goes back to the pool.
func (l *pairList) object() ast.Object {
	o := ast.NewObject(l.s...)
	l.release()
	return o
}

func (l *pairList) release() {
	if cap(l.s) > maxPooledPairs {
		return
	}
	clear(l.s)
	l.s = l.s[:0]
	pairLists.Put(l)
}

// projectValue converts the read parts of a decoded JSON value (an
// unstructured object's content) to an OPA value: an object's unread keys,
// and an array's elements' unread keys, are never converted.
func projectValue(v any, p *InputPaths) (ast.Value, error) {
	if p == nil || p.all {
		return ast.InterfaceToValue(v)
	}
	switch x := v.(type) {
	case map[string]any:
		return projectMap(x, p)
	case []any:
		if p.each == nil {
			return ast.NewArray(), nil
		}
		out := make([]*ast.Term, len(x))
		for i, e := range x {
			val, err := projectValue(e, p.each)
			if err != nil {
				return nil, err
			}
			out[i] = ast.NewTerm(val)
		}
		return ast.NewArray(out...), nil
	}
	return ast.InterfaceToValue(v)
}

// projectMap walks the map's keys when every key is read into, else only the
// keys read: a large map (an object's annotations) is not walked for one key.
// A key the policies name is the term its paths keep; any other is the
// requester's (a label's, a resource's) and gets a term of its own, as
// ast.InterfaceToValue would give it: no table keeps it.
func projectMap(m map[string]any, p *InputPaths) (ast.Value, error) {
	out := getPairs()
	add := func(k string, sub any) error {
		c, key := p.children[k], (*ast.Term)(nil)
		if c != nil {
			key = c.key
		} else {
			c, key = p.each, str(k)
		}
		val, err := projectValue(sub, c)
		if err == nil {
			out.add(key, ast.NewTerm(val))
		}
		return err
	}
	if p.each != nil {
		for k, sub := range m {
			if err := add(k, sub); err != nil {
				return nil, err
			}
		}
		return out.object(), nil
	}
	for k := range p.children {
		if sub, ok := m[k]; ok {
			if err := add(k, sub); err != nil {
				return nil, err
			}
		}
	}
	return out.object(), nil
}
