package policies

import (
	"slices"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The parts of the object the workload summary points at: input.workload's
// podSpecs and jobSpecs, and their paths.

// specTerms are the values at each path of obj, in order, each projected to
// what read (the element paths of an array read as a whole): what a policy
// would read with object.get(input.object, path, null), given without the rest
// of the object so that reading it does not make the object's name and uid part
// of what the policies read (see InputPaths). A path inside one of outerPaths
// shares that outer term's part instead of being converted again.
func specTerms(obj *unstructured.Unstructured, paths [][]any, read *InputPaths, outerPaths [][]any, outer []*ast.Term) []*ast.Term {
	var elem *InputPaths
	if read != nil && !read.all {
		if read.each == nil {
			return nil // only there, as an array: no element is read
		}
		elem = read.each
	}
	out := make([]*ast.Term, len(paths))
	for i, p := range paths {
		out[i] = nullTerm
		if t := withinTerm(p, outerPaths, outer); t != nil {
			out[i] = projectTerm(t, elem)
		} else if v, ok := valueAt(obj.Object, p); ok {
			if val, err := projectValue(v, elem); err == nil {
				out[i] = ast.NewTerm(val)
			}
		}
	}
	return out
}

// withinTerm is the term at path inside the outer term whose path is a prefix
// of it, or nil.
func withinTerm(path []any, outerPaths [][]any, outer []*ast.Term) *ast.Term {
	for j, prefix := range outerPaths {
		if j >= len(outer) || len(prefix) > len(path) || !slices.Equal(prefix, path[:len(prefix)]) {
			continue
		}
		t := outer[j]
		for _, seg := range path[len(prefix):] {
			if t = child(t, seg); t == nil {
				return nil
			}
		}
		return t
	}
	return nil
}

// child is a map key's or list index's term, or nil.
func child(t *ast.Term, seg any) *ast.Term {
	switch k := seg.(type) {
	case string:
		if o, ok := t.Value.(ast.Object); ok {
			return o.Get(ast.StringTerm(k))
		}
	case int:
		if a, ok := t.Value.(*ast.Array); ok && k >= 0 && k < a.Len() {
			return a.Elem(k)
		}
	}
	return nil
}

// valueAt follows a path of map keys and list indices.
func valueAt(v any, path []any) (any, bool) {
	for _, seg := range path {
		switch k := seg.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false
			}
			v = l[k]
		default:
			return nil, false
		}
	}
	return v, true
}

// renderedPaths are paths and their term.
type renderedPaths struct {
	paths [][]any
	term  *ast.Term
}

// lastPaths keeps, for each catalog kind and for its pod and Job spec paths,
// the last paths rendered: a kind's workloads nearly always have the same
// ones (a Job's one pod template), and equal paths render equal terms, which
// are never modified. Another shape takes the place; the memory is one entry
// each.
var lastPaths = map[schema.GroupVersionKind]*[2]atomic.Pointer[renderedPaths]{}

// Which paths lastPaths keeps.
const (
	podPaths = iota
	jobPaths
)

// pathsTermOf is pathsTerm(paths), reusing the last term of kind's paths of
// that sort when they are equal.
func pathsTermOf(kind schema.GroupVersionKind, which int, paths [][]any) *ast.Term {
	slots, ok := lastPaths[kind]
	if !ok {
		return pathsTerm(paths)
	}
	if last := slots[which].Load(); last != nil && slices.EqualFunc(last.paths, paths, slices.Equal) {
		return last.term
	}
	t := pathsTerm(paths)
	slots[which].Store(&renderedPaths{paths: paths, term: t})
	return t
}

// pathsTerm renders paths of map keys and list indices.
func pathsTerm(paths [][]any) *ast.Term {
	out := make([]*ast.Term, len(paths))
	for i, p := range paths {
		elems := make([]*ast.Term, len(p))
		for j, e := range p {
			if n, ok := e.(int); ok {
				elems[j] = ast.InternedTerm(n)
			} else {
				elems[j] = str(e.(string))
			}
		}
		out[i] = ast.ArrayTerm(elems...)
	}
	return ast.ArrayTerm(out...)
}
