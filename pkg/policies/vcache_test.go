package policies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// cacheOp is one call on a topdown.VirtualCache; a get records what it saw.
type cacheOp struct {
	op    string // put, get, push, pop
	ref   string
	value *ast.Term // put's; nil records the ref as undefined
}

type cacheGot struct {
	Value     string
	Undefined bool
}

func runCacheOps(c topdown.VirtualCache, ops []cacheOp) []cacheGot {
	var got []cacheGot
	for _, o := range ops {
		switch o.op {
		case "put":
			// topdown passes a slice it reuses: the cache must keep a copy.
			ref := ast.MustParseRef(o.ref)
			c.Put(ref, o.value)
			for i := range ref {
				ref[i] = ast.StringTerm("clobbered")
			}
		case "get":
			v, undefined := c.Get(ast.MustParseRef(o.ref))
			g := cacheGot{Undefined: undefined}
			if v != nil {
				g.Value = v.String()
			}
			got = append(got, g)
		case "push":
			c.Push()
		case "pop":
			c.Pop()
		}
	}
	return got
}

// refCache answers every sequence of calls as OPA's own cache does.
func TestRefCacheAnswersAsOPAs(t *testing.T) {
	one, two := ast.InternedTerm(1), ast.InternedTerm(2)
	for name, ops := range map[string][]cacheOp{
		"a value and a miss": {
			{op: "put", ref: "data.p.x", value: one},
			{op: "get", ref: "data.p.x"}, {op: "get", ref: "data.p.y"}, {op: "get", ref: "data.p"},
		},
		"undefined is not a miss": {
			{op: "put", ref: "data.p.x"}, {op: "get", ref: "data.p.x"},
		},
		"a function's arguments tell calls apart": {
			{op: "put", ref: `data.p.f["cpu"]`, value: one}, {op: "put", ref: `data.p.f["memory"]`, value: two},
			{op: "get", ref: `data.p.f["cpu"]`}, {op: "get", ref: `data.p.f["memory"]`}, {op: "get", ref: `data.p.f["gpu"]`},
		},
		// Hashes add up their parts: a permutation collides and must not match.
		"same hash, other order": {
			{op: "put", ref: `data.p.f["a"]["b"]`, value: one},
			{op: "get", ref: `data.p.f["b"]["a"]`}, {op: "get", ref: `data.p.f["a"]["b"]`},
		},
		"a value replaced": {
			{op: "put", ref: "data.p.x", value: one}, {op: "put", ref: "data.p.x", value: two},
			{op: "get", ref: "data.p.x"},
		},
		"a frame sees only its own entries, and the one below comes back": {
			{op: "put", ref: "data.p.x", value: one},
			{op: "push"}, {op: "get", ref: "data.p.x"}, {op: "put", ref: "data.p.x", value: two},
			{op: "get", ref: "data.p.x"}, {op: "pop"},
			{op: "get", ref: "data.p.x"},
			{op: "push"}, {op: "get", ref: "data.p.x"}, {op: "pop"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			want := runCacheOps(topdown.NewVirtualCache(), ops)
			c := getRefCache()
			got := runCacheOps(c, ops)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refCache differs from OPA's (-OPA +refCache):\n%s", diff)
			}
			// Emptied and reused, it answers the same again.
			putRefCache(c)
			c = getRefCache()
			defer putRefCache(c)
			if diff := cmp.Diff(want, runCacheOps(c, ops)); diff != "" {
				t.Errorf("a reused refCache differs (-OPA +refCache):\n%s", diff)
			}
		})
	}
}

// An evaluation that ends inside a frame (an error under a with) leaves the
// cache emptied to its base frame for the next one.
func TestRefCacheResetDropsFrames(t *testing.T) {
	c := newRefCache()
	c.Put(ast.MustParseRef("data.p.x"), ast.InternedTerm(1))
	c.Push()
	c.Put(ast.MustParseRef("data.p.y"), ast.InternedTerm(2))
	c.reset()
	for _, ref := range []string{"data.p.x", "data.p.y"} {
		if v, undefined := c.Get(ast.MustParseRef(ref)); v != nil || undefined {
			t.Errorf("%s is still cached after reset", ref)
		}
	}
	if c.depth != 1 || len(c.Keys()) != 0 {
		t.Errorf("reset left depth %d and keys %v", c.depth, c.Keys())
	}
}

// After its first evaluations the cache allocates nothing.
func TestRefCacheReusesItsMemory(t *testing.T) {
	refs := []ast.Ref{ast.MustParseRef("data.p.x"), ast.MustParseRef(`data.p.f["cpu"]`), ast.MustParseRef(`data.lib.settings`)}
	c := newRefCache()
	fill := func() {
		for _, r := range refs {
			c.Put(r, ast.InternedTerm(1))
			c.Get(r)
		}
		c.Push()
		c.Put(refs[0], ast.InternedTerm(2))
		c.Pop()
		c.reset()
	}
	fill()
	if n := testing.AllocsPerRun(100, fill); n != 0 {
		t.Errorf("a reused cache allocates %v times per evaluation", n)
	}
}
