package policies

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
)

// constantRules keeps exactly the complete rules no request can change: a
// rule that reaches input by any road (a rule, a function, a dynamic
// reference, an else, a default's siblings) or a with modifier is evaluated
// per request.
func TestConstantRules(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		want []string
	}{
		"settings read from data": {
			src:  "settings := object.get(data.cfg, \"x\", {})\nlimit := settings.max\n",
			want: []string{"data.p.limit", "data.p.settings"},
		},
		"a rule reading input, and one using it": {
			src:  "q := input.q\nr := concat(\"/\", [q, \"x\"])\nk := \"k\"\n",
			want: []string{"data.p.k"},
		},
		"input reached through a function": {
			src:  "f(x) := y if {\n\ty := x\n\tinput.a\n}\nv := f(1)\ng(x) := x + 1\nw := g(1)\n",
			want: []string{"data.p.w"},
		},
		"input passed to a function": {
			src:  "g(x) := x + 1\nw := g(input.n)\n",
			want: nil,
		},
		"a with modifier": {
			src:  "v := x if x := w with data.cfg as 1\nw := data.cfg\n",
			want: []string{"data.p.w"},
		},
		"a with modifier in a function it calls": {
			src:  "f(x) := y if y := data.cfg with data.cfg as x\nv := f(1)\n",
			want: nil,
		},
		"print, trace, the clock": {
			src:  "v := 1 if print(\"x\")\nw := 2 if trace(\"x\")\nt := time.now_ns()\nu := [time.now_ns()]\n",
			want: nil,
		},
		// The compiler writes a rule's metadata chain into the rule.
		"the rule chain": {
			src:  "c := rego.metadata.chain()\n",
			want: []string{"data.p.c"},
		},
		"a dynamic reference that may reach input": {
			src:  "q := input.q\nv := data.p[k] if k := \"q\"\n",
			want: nil,
		},
		"a dynamic reference into independent rules": {
			src:  "v := data.r[k] if k := \"a\"\n",
			want: []string{"data.p.v", "data.r.a"},
		},
		"a package holding a rule that reads input": {
			src:  "v := count(data.s)\nw := count(data.r)\n",
			want: []string{"data.p.w", "data.r.a"},
		},
		"multi-value rules are used, not kept": {
			src:  "s contains 1\ns contains 2\nc := count(s)\nt contains input.x\nd := count(t)\n",
			want: []string{"data.p.c"},
		},
		"an else reading input": {
			src:  "v := 1 if input.a\nelse := 2\n",
			want: nil,
		},
		"a default beside a rule reading input": {
			src:  "default v := 1\nv := 2 if input.a\ndefault w := 3\n",
			want: []string{"data.p.w"},
		},
		"input in a comprehension": {
			src:  "v := [x | some x in input.xs]\nw := [x | some x in [1, 2]]\n",
			want: []string{"data.p.w"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := compileForTest(t, map[string]string{
				"p.rego": "package p\n\n" + tc.src,
				"r.rego": "package r\n\na := 1\n",
				"s.rego": "package s\n\nb := input.b\n",
			})
			var got []string
			for _, ref := range constantRules(c) {
				if ref.HasPrefix(ast.MustParseRef("data.p")) || tc.want != nil && slices.Contains(tc.want, ref.String()) {
					got = append(got, ref.String())
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("constant rules (-want +got):\n%s", diff)
			}
		})
	}
}

func compileForTest(t *testing.T, files map[string]string) *ast.Compiler {
	t.Helper()
	caps, err := Capabilities("time.now_ns")
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]*ast.Module{}
	for name, src := range files {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: regoVersion, Capabilities: caps})
		if err != nil {
			t.Fatal(err)
		}
		modules[name] = m
	}
	c := newCompiler(caps, true)
	if c.Compile(modules); c.Failed() {
		t.Fatal(c.Errors)
	}
	return c
}
