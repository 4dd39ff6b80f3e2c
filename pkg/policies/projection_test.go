package policies

import (
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// flatten lists the paths a set reads, "*" for everything.
func flatten(p *InputPaths) []string {
	if p == nil {
		return []string{"*"}
	}
	var out []string
	var walk func(p *InputPaths, prefix []string)
	walk = func(p *InputPaths, prefix []string) {
		if p.all {
			out = append(out, strings.Join(prefix, "."))
			return
		}
		for k, c := range p.children {
			walk(c, append(slices.Clone(prefix), k))
		}
	}
	walk(p, nil)
	slices.Sort(out)
	return out
}

func analyzeSource(src string) setFacts {
	mod, err := ast.ParseModuleWithOpts("p.rego", src, ast.ParserOptions{RegoVersion: regoVersion})
	Expect(err).NotTo(HaveOccurred())
	c := ast.NewCompiler()
	c.Compile(map[string]*ast.Module{"p.rego": mod})
	Expect(c.Failed()).To(BeFalse(), "%v", c.Errors)
	return analyze(c.Modules)
}

var _ = Describe("What a policy set reads of its input", func() {
	DescribeTable("is every reference to input, up to its first computed part",
		func(rules string, want []string, deterministic bool) {
			got := analyzeSource("package p\n\nimport data.lib\n\n" + rules)
			Expect(cmp.Diff(want, flatten(got.paths))).To(BeEmpty())
			Expect(got.deterministic).To(Equal(deterministic))
		},
		Entry("fixed paths", `deny contains "x" if input.workload.queueName == "q"
warn contains "y" if input.request.userInfo.username == "bob"`,
			[]string{"request.userInfo.username", "workload.queueName"}, true),
		Entry("a computed key reads the whole value before it", `deny contains r if {
	some r, n in input.workload.totalRequests
	n > input.namespace.labels[r]
}`, []string{"namespace.labels", "workload.totalRequests"}, true),
		Entry("a shorter path wins over a longer one", `a if input.object.metadata.labels.x
b if input.object.metadata`, []string{"object.metadata"}, true),
		Entry("an imported input path is resolved", `import input.object.spec as spec
deny contains "x" if spec.parallelism > 2`, []string{"object.spec.parallelism"}, true),
		Entry("input passed whole reads everything", `deny contains "x" if json.marshal(input) == ""`, []string{"*"}, true),
		Entry("a computed first key reads everything", `deny contains k if input[k]`, []string{"*"}, true),
		Entry("a with on input reads everything", `x if input.a
deny contains "x" if x with input as {"a": true}`, []string{"*"}, true),
		Entry("a function's arguments count", `f(o) := o.spec
deny contains "x" if f(input.object).parallelism > 1`, []string{"object"}, true),
		Entry("time makes the set non-deterministic", `deny contains "late" if time.now_ns() > input.workload.deadline`,
			[]string{"workload.deadline"}, false),
		Entry("so does a nested random number", `deny contains "x" if {
	count(input.workload.podSets) > rand.intn("seed", 3)
}`, []string{"workload.podSets"}, false),
	)

	It("for the shipped policies, leaves out what tells two workloads of one shape apart", func() {
		e, err := NewEngine(Options{Directory: "../../policies"})
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Load()).To(Succeed())
		set := e.set.Load()
		Expect(set.facts.deterministic).To(BeTrue())
		read := flatten(set.facts.paths)
		for _, p := range []string{"object", "oldObject", "object.metadata", "object.metadata.name", "object.metadata.uid",
			"request", "request.uid", "request.name"} {
			Expect(read).NotTo(ContainElement(p))
		}
		Expect(read).To(ContainElements("object.metadata.labels", "workload"))
		Expect(set.decisions).NotTo(BeNil())
	})

	It("builds an input whose unread parts are left out, and converts only the read parts of the object", func() {
		paths := &InputPaths{}
		paths.add([]string{"object", "metadata", "labels"})
		paths.add([]string{"request", "operation"})
		obj := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"q": "x"}}, "spec": map[string]any{"n": 1}}
		v, err := projectValue(obj, paths.child("object"))
		Expect(err).NotTo(HaveOccurred())
		js, err := ast.JSON(v)
		Expect(err).NotTo(HaveOccurred())
		Expect(cmp.Diff(map[string]any{"metadata": map[string]any{"labels": map[string]any{"q": "x"}}}, js)).To(BeEmpty())
		Expect(paths.reads("workload")).To(BeFalse())
		Expect((*InputPaths)(nil).reads("workload")).To(BeTrue())
	})
})
