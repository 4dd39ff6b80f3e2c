package policies

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// readPaths finds what a compiled policy set reads of input, following the
// values that reach a local variable or a function's parameter: in
// `pod := input.workload.podSpecs[i]; pod.terminationGracePeriodSeconds` the set
// reads workload.podSpecs[*].terminationGracePeriodSeconds, not the pod specs
// whole, so a JobSet's environment variables are never converted. It is sound
// by construction rather than complete: a value used any other way than as the
// head of a reference, a parameter, or object.get's object with a constant key
// (compared, counted, passed to a built-in, put in a rule's value) is read
// whole at its path.
type readPaths struct {
	compiler *ast.Compiler
	input    *InputPaths
	bounded  bool
	// params are each analysed function's parameters' reads; an entry is nil
	// when the function cannot be analysed, or while it is (Rego has no
	// recursion, but a cycle must not loop): then an argument is read whole.
	params map[string][]*InputPaths
}

// part is one part of a path: a constant key, or any key or index (a variable).
type part struct {
	key string
	any bool
}

// origin is where a value comes from: a path under the root whose reads are
// recorded in tree (the input's, or a parameter's while its function is
// analysed).
type origin struct {
	tree  *InputPaths
	parts []part
}

func (o origin) under(more []part) origin {
	return origin{tree: o.tree, parts: append(slices.Clip(o.parts), more...)}
}

// scope is one rule's variables: those bound to a value from input, and those
// seen bound to anything (a variable's first occurrence in the compiled,
// safety-ordered body binds it).
type scope struct {
	alias map[ast.Var][]origin
	seen  map[ast.Var]bool
}

func newReadPaths(c *ast.Compiler) *readPaths {
	return &readPaths{compiler: c, input: &InputPaths{}, bounded: true,
		params: map[string][]*InputPaths{}}
}

// function analyses a function once and returns its parameters' reads.
func (a *readPaths) function(ref ast.Ref) []*InputPaths {
	name := ref.String()
	if p, ok := a.params[name]; ok {
		return p
	}
	a.params[name] = nil
	rules := a.compiler.GetRulesExact(ref)
	if len(rules) == 0 {
		return nil
	}
	params := make([]*InputPaths, len(rules[0].Head.Args))
	for i := range params {
		params[i] = &InputPaths{}
	}
	for _, first := range rules {
		args := first.Head.Args // an else rule may leave them to the first
		for r := first; r != nil; r = r.Else {
			if len(r.Head.Args) > 0 {
				args = r.Head.Args
			}
			a.rule(r, func(s *scope) { bindParams(s, args, params) })
		}
	}
	a.params[name] = params
	return params
}

// bindParams makes each parameter variable an alias of its argument. A
// parameter that is not a variable, or a variable given twice (f(x, x)), is
// compared with its argument: that argument is read whole.
func bindParams(s *scope, args []*ast.Term, params []*InputPaths) {
	first := map[ast.Var]int{}
	for i, arg := range args {
		if i >= len(params) {
			break
		}
		v, ok := arg.Value.(ast.Var)
		if j, twice := first[v]; ok && twice {
			params[j].add(nil)
			ok = false
		}
		if !ok {
			params[i].add(nil)
			continue
		}
		first[v] = i
		s.alias[v] = []origin{{tree: params[i]}}
		s.seen[v] = true
	}
}

func (a *readPaths) rule(r *ast.Rule, bindArgs func(*scope)) {
	s := &scope{alias: map[ast.Var][]origin{}, seen: map[ast.Var]bool{}}
	if bindArgs != nil {
		bindArgs(s)
	}
	a.body(s, r.Body)
	if r.Head.Key != nil {
		a.use(s, r.Head.Key)
	}
	if r.Head.Value != nil {
		a.use(s, r.Head.Value)
	}
	for _, t := range r.Head.Reference[1:] {
		a.use(s, t)
	}
}

func (a *readPaths) body(s *scope, b ast.Body) {
	for _, e := range b {
		a.expr(s, e)
	}
}

func (a *readPaths) expr(s *scope, e *ast.Expr) {
	for _, w := range e.With {
		if target, ok := w.Target.Value.(ast.Ref); !ok || target[0].Equal(ast.InputRootDocument) {
			a.bounded = false
		}
		a.use(s, w.Value)
	}
	switch t := e.Terms.(type) {
	case *ast.Term:
		a.use(s, t)
	case *ast.Every:
		a.use(s, t.Domain)
		a.use(s, t.Key)
		a.use(s, t.Value)
		a.body(s, t.Body)
	case []*ast.Term:
		if (e.IsEquality() || e.IsAssignment()) && (a.bind(s, t[1], t[2]) || a.bind(s, t[2], t[1])) {
			return
		}
		a.call(s, t[0], t[1:])
	default:
		ast.WalkTerms(e, func(t *ast.Term) bool {
			a.use(s, t)
			return false
		})
	}
}

// bind makes v, at its first occurrence, an alias of what value comes from.
func (a *readPaths) bind(s *scope, v, value *ast.Term) bool {
	name, ok := v.Value.(ast.Var)
	if !ok || s.seen[name] {
		return false
	}
	var from []origin
	if !a.reach(s, value, func(o origin) { from = append(from, o) }) {
		return false
	}
	s.alias[name], s.seen[name] = from, true
	return true
}

// reach calls f with each place t's value comes from in input, and reports
// whether it comes from input at all. Each place is kept present first: a
// binding or a call holds only where its value is defined.
func (a *readPaths) reach(s *scope, t *ast.Term, f func(origin)) bool {
	from := a.origins(s, t)
	if from == nil {
		return false
	}
	a.refParts(s, t)
	for _, o := range from {
		o.tree.present(o.parts)
		f(o)
	}
	return true
}

// call records a call's reads: a user function's arguments by what its
// parameters read, a type check's argument by its type, object.get's object by
// its constant key, and any other argument whole.
func (a *readPaths) call(s *scope, operator *ast.Term, args []*ast.Term) {
	op, _ := operator.Value.(ast.Ref)
	switch {
	case len(op) == 0: // never made by OPA's parser: every argument is read whole
	case op[0].Equal(ast.DefaultRootDocument):
		params := a.function(op)
		for i, arg := range args {
			if i >= len(params) || !a.reach(s, arg, func(o origin) { a.graft(o, params[i], nil) }) {
				a.use(s, arg)
			}
		}
		return
	case typeChecks[op.String()] && len(args) >= 1:
		// is_object(x) needs x there with its type, not its content: a
		// projected object is still an object.
		if a.reach(s, args[0], func(origin) {}) {
			args = args[1:]
		}
	case op.Equal(ast.ObjectGet.Ref()) && len(args) >= 2:
		if key, ok := constantPath(args[1]); ok && a.reach(s, args[0], func(o origin) { a.record(o.under(key)) }) {
			args = args[1:]
		}
	}
	for _, arg := range args {
		a.use(s, arg)
	}
}

// typeChecks are the built-ins that read only their argument's type.
var typeChecks = map[string]bool{
	ast.IsObject.Name: true, ast.IsArray.Name: true, ast.IsSet.Name: true, ast.IsString.Name: true,
	ast.IsNumber.Name: true, ast.IsBoolean.Name: true, ast.IsNull.Name: true,
}

// constantPath is object.get's key as path parts: a string, or an array of
// strings.
func constantPath(t *ast.Term) ([]part, bool) {
	switch k := t.Value.(type) {
	case ast.String:
		return []part{{key: string(k)}}, true
	case *ast.Array:
		out := make([]part, 0, k.Len())
		for i := range k.Len() {
			s, ok := k.Elem(i).Value.(ast.String)
			if !ok {
				return nil, false
			}
			out = append(out, part{key: string(s)})
		}
		return out, true
	}
	return nil, false
}

// use records t read whole, and binds the variables it is the first
// occurrence of.
func (a *readPaths) use(s *scope, t *ast.Term) {
	if t == nil {
		return
	}
	switch v := t.Value.(type) {
	case ast.Var:
		if from, ok := s.alias[v]; ok {
			for _, o := range from {
				a.record(o)
			}
		}
		s.seen[v] = true
	case ast.Ref:
		if from := a.origins(s, t); from != nil {
			for _, o := range from {
				a.record(o)
			}
		} else if _, ok := v[0].Value.(ast.Var); !ok {
			a.use(s, v[0])
		}
		a.refParts(s, t)
	case ast.Call:
		a.call(s, v[0], v[1:])
	case *ast.ArrayComprehension:
		a.body(s, v.Body)
		a.use(s, v.Term)
	case *ast.SetComprehension:
		a.body(s, v.Body)
		a.use(s, v.Term)
	case *ast.ObjectComprehension:
		a.body(s, v.Body)
		a.use(s, v.Key)
		a.use(s, v.Value)
	default:
		ast.WalkTerms(v, func(sub *ast.Term) bool {
			a.use(s, sub)
			return false
		})
	}
}

// refParts handles the parts of a reference after its head: a variable is a
// key (bound there, or used whole when it holds a value from input), any other
// term is used.
func (a *readPaths) refParts(s *scope, t *ast.Term) {
	ref, ok := t.Value.(ast.Ref)
	if !ok {
		return
	}
	if v, ok := ref[0].Value.(ast.Var); ok && !s.seen[v] && !v.Equal(ast.InputRootDocument.Value) && !v.Equal(ast.DefaultRootDocument.Value) {
		s.seen[v] = true
	}
	for _, p := range ref[1:] {
		if _, ok := p.Value.(ast.String); !ok {
			a.use(s, p)
		}
	}
}

// origins are where the value of t comes from: input, or a variable bound to
// a value from input, followed by the reference's parts; nil for any other
// value.
func (a *readPaths) origins(s *scope, t *ast.Term) []origin {
	var head []origin
	var rest ast.Ref
	switch v := t.Value.(type) {
	case ast.Var:
		return s.alias[v]
	case ast.Ref:
		if v[0].Equal(ast.InputRootDocument) {
			head = []origin{{tree: a.input}}
		} else if name, ok := v[0].Value.(ast.Var); ok {
			head = s.alias[name]
		}
		rest = v[1:]
	}
	if head == nil {
		return nil
	}
	parts := make([]part, len(rest))
	for i, p := range rest {
		if k, ok := p.Value.(ast.String); ok {
			parts[i] = part{key: string(k)}
		} else {
			parts[i] = part{any: true}
		}
	}
	out := make([]origin, len(head))
	for i, o := range head {
		out[i] = o.under(parts)
	}
	return out
}

// record marks the value at o read whole; input itself read whole leaves the
// set unbounded.
func (a *readPaths) record(o origin) {
	if o.tree == a.input && len(o.parts) == 0 {
		a.bounded = false
	}
	o.tree.addParts(o.parts)
}

// graft records, under o, what a parameter's analysis found read under it,
// including what it needs only to be there.
func (a *readPaths) graft(o origin, p *InputPaths, prefix []part) {
	if p.all {
		a.record(o.under(prefix))
		return
	}
	o.tree.present(o.under(prefix).parts)
	for k, c := range p.children {
		a.graft(o, c, append(slices.Clip(prefix), part{key: k}))
	}
	if p.each != nil {
		a.graft(o, p.each, append(slices.Clip(prefix), part{any: true}))
	}
}
