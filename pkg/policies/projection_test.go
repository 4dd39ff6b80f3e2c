package policies

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// flatten lists the paths a set reads, "*" for everything and for any key
// or index, "?" after a path that must only be there (its type is read).
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
		if len(p.children) == 0 && p.each == nil {
			out = append(out, strings.Join(prefix, ".")+"?")
		}
		for k, c := range p.children {
			walk(c, append(slices.Clone(prefix), k))
		}
		if p.each != nil {
			walk(p.each, append(slices.Clone(prefix), "*"))
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
	// Every rule of the module is an entry: the entries test what each reads.
	return analyze(c, c.Modules["p.rego"].Rules)
}

// analyzeSet is what a set of modules reads from package p's deny and warn
// rules, as the engine analyses a policy set.
func analyzeSet(modules map[string]string) []string {
	parsed := map[string]*ast.Module{}
	for name, src := range modules {
		mod, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: regoVersion})
		Expect(err).NotTo(HaveOccurred())
		parsed[name] = mod
	}
	c := ast.NewCompiler()
	c.Compile(parsed)
	Expect(c.Failed()).To(BeFalse(), "%v", c.Errors)
	p := &Policy{path: ast.MustParseRef("data.p")}
	return flatten(analyze(c, entryRules(c, []*Policy{p})).paths)
}

var _ = Describe("What a policy set reads of its input", func() {
	DescribeTable("is what the rules its policies may evaluate read",
		func(policy, lib string, want []string) {
			got := analyzeSet(map[string]string{"p.rego": "package p\n\nimport data.lib\n\n" + policy,
				"lib.rego": "package lib\n\n" + lib})
			Expect(cmp.Diff(want, got)).To(BeEmpty())
		},
		Entry("a helper no policy calls reads nothing", `deny contains "x" if lib.queue == "q"`,
			`queue := input.workload.queueName
labels := input.object.metadata.labels`, []string{"workload.queueName"}),
		Entry("through helpers calling helpers, functions and else branches", `deny contains "x" if lib.f(1)`,
			`f(_) if g == "a"
g := input.workload.kind.kind if input.request.operation == "CREATE"
else := input.object.kind`, []string{"object.kind", "request.operation", "workload.kind.kind"}),
		Entry("a computed rule name depends on every rule it may select", `deny contains "x" if {
	some name in input.request.names
	data.lib[name] == 1
}`, `a := input.workload.a
b := input.workload.b`, []string{"request.names.*", "workload.a", "workload.b"}),
		Entry("a warn rule is an entry too", `warn contains "x" if lib.w`,
			`w if input.workload.grows`, []string{"workload.grows"}),
	)

	DescribeTable("is every reference to input, followed through variables and functions",
		func(rules string, want []string, deterministic bool) {
			got := analyzeSource("package p\n\nimport data.lib\n\n" + rules)
			Expect(cmp.Diff(want, flatten(got.paths))).To(BeEmpty())
			Expect(got.deterministic).To(Equal(deterministic))
		},
		Entry("fixed paths", `deny contains "x" if input.workload.queueName == "q"
warn contains "y" if input.request.userInfo.username == "bob"`,
			[]string{"request.userInfo.username", "workload.queueName"}, true),
		Entry("a computed key reads every key", `deny contains r if {
	some r, n in input.workload.totalRequests
	n > input.namespace.labels[r]
}`, []string{"namespace.labels.*", "workload.totalRequests.*"}, true),
		Entry("a shorter path wins over a longer one", `a if input.object.metadata.labels.x
b if input.object.metadata`, []string{"object.metadata"}, true),
		Entry("an imported input path is resolved", `import input.object.spec as spec
deny contains "x" if spec.parallelism > 2`, []string{"object.spec.parallelism"}, true),
		Entry("input passed whole reads everything", `deny contains "x" if json.marshal(input) == ""`, []string{"*"}, true),
		Entry("a computed first key reads everything", `deny contains k if input[k]`, []string{"*"}, true),
		Entry("a with on input reads everything", `x if input.a
deny contains "x" if x with input as {"a": true}`, []string{"*"}, true),
		Entry("a variable bound to an element reads only what is read of it", `deny contains "x" if {
	some pod in input.workload.podSpecs
	pod.terminationGracePeriodSeconds > 30
}`, []string{"workload.podSpecs.*.terminationGracePeriodSeconds"}, true),
		Entry("an element only iterated must still be there", `deny contains i if {
	some i, _ in input.workload.podSpecs
}`, []string{"workload.podSpecs.*?"}, true),
		Entry("a variable compared whole reads its value whole", `deny contains "x" if {
	some pod in input.workload.podSpecs
	pod == {}
}`, []string{"workload.podSpecs.*"}, true),
		Entry("a variable compared with another reads both whole", `deny contains "x" if {
	a := input.object.spec
	b := input.oldObject.spec
	a == b
}`, []string{"object.spec", "oldObject.spec"}, true),
		Entry("a variable in a rule's value reads it whole", `pods contains pod if some pod in input.workload.podSpecs
deny contains "x" if count(pods) > 3`, []string{"workload.podSpecs.*"}, true),
		Entry("a variable passed to a built-in reads it whole", `deny contains "x" if {
	some c in input.object.spec.containers
	count(c.env) > 100
}`, []string{"object.spec.containers.*.env"}, true),
		Entry("a type check needs only the value's type", `deny contains "x" if is_object(input.oldWorkload)`,
			[]string{"oldWorkload?"}, true),
		Entry("object.get with a constant key reads that key", `deny contains "x" if {
	some pod in input.workload.podSpecs
	object.get(pod, ["securityContext", "runAsUser"], 0) == 0
}`, []string{"workload.podSpecs.*.securityContext.runAsUser"}, true),
		Entry("object.get with a computed key reads the object whole", `deny contains k if {
	some k in ["a", "b"]
	object.get(input.object.spec, k, 0) == 0
}`, []string{"object.spec"}, true),
		Entry("a function reads of its argument what its body reads of the parameter", `grace(pod) := object.get(pod, "terminationGracePeriodSeconds", 30)
deny contains "x" if {
	some pod in input.workload.podSpecs
	grace(pod) > 300
}`, []string{"workload.podSpecs.*.terminationGracePeriodSeconds"}, true),
		Entry("through functions calling functions", `inner(c) := c.resources.requests.cpu
outer(pod) := [inner(c) | some c in pod.containers]
deny contains "x" if count(outer(input.object.spec)) > 1`, []string{"object.spec.containers.*.resources.requests.cpu"}, true),
		Entry("a function's value is read whole", `f(o) := o.spec
deny contains "x" if f(input.object).parallelism > 1`, []string{"object.spec"}, true),
		Entry("a function's unused parameter must still be there", `f(_) := true
deny contains "x" if f(input.object.spec)`, []string{"object.spec?"}, true),
		Entry("a function with a constant argument reads that parameter whole", `f("x", o) := o.a
deny contains "x" if f(input.workload.kind, input.object) == 1`, []string{"object.a", "workload.kind"}, true),
		Entry("a parameter given twice compares its arguments whole", `same(x, x) := true
deny contains "x" if same(input.object.spec, input.oldObject.spec)`, []string{"object.spec", "oldObject.spec"}, true),
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
			"request", "request.uid", "request.name", "object.metadata.labels", "namespace.labels"} {
			Expect(read).NotTo(ContainElement(p))
		}
		// Labels are read by their keys: a label of a workload's own (a
		// sweep's trial) or of its namespace leaves the input as it was.
		Expect(read).To(ContainElements("object.metadata.labels.kueue.x-k8s.io/max-exec-time-seconds",
			"namespace.labels.kueue-guard.io/max-gpus", "workload.queueName"))
		// A pod spec's containers are read field by field: their environment,
		// image and command are never converted.
		for _, p := range []string{"workload", "workload.podSpecs.*", "workload.jobSpecs.*", "workload.podSpecs.*.containers.*",
			"oldWorkload", "oldWorkload.podSpecs.*", "oldWorkload.jobSpecs.*", "oldWorkload.priorityClass"} {
			Expect(read).NotTo(ContainElement(p))
		}
		Expect(read).To(ContainElement("workload.podSpecs.*.containers.*.resources.requests.*"))
		// The ClusterQueue's capacity, by resource, not its workload counts,
		// which change with every workload the queue admits.
		for _, p := range []string{"clusterQueue", "clusterQueue.pendingWorkloads", "clusterQueue.admittedWorkloads",
			"clusterQueue.reservingWorkloads"} {
			Expect(read).NotTo(ContainElement(p))
		}
		Expect(read).To(ContainElements("clusterQueue.resources.*.free", "clusterQueue.name"))
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

	DescribeTable("projects terms and decoded values alike, through every key or element",
		func(value string, paths [][]string, want string) {
			read := &InputPaths{}
			for _, p := range paths {
				parts := make([]part, len(p))
				for i, k := range p {
					parts[i] = part{key: k, any: k == "*"}
				}
				read.addParts(parts)
			}
			read.seal()
			var decoded any
			Expect(json.Unmarshal([]byte(value), &decoded)).To(Succeed())
			fromValue, err := projectValue(decoded, read)
			Expect(err).NotTo(HaveOccurred())
			fromTerm := projectTerm(ast.MustParseTerm(value), read)
			Expect(cmp.Diff(ast.MustParseTerm(want).String(), fromTerm.String())).To(BeEmpty())
			Expect(cmp.Diff(ast.MustParseTerm(want).String(), ast.NewTerm(fromValue).String())).To(BeEmpty())
		},
		Entry("an element's unread keys are left out", `[{"a": 1, "b": 2}, {"a": 3, "c": 4}]`, [][]string{{"*", "a"}},
			`[{"a": 1}, {"a": 3}]`),
		Entry("every key, and one key further", `{"x": {"a": 1, "b": 2}, "y": {"a": 3, "b": 4}}`,
			[][]string{{"*", "a"}, {"x", "b"}}, `{"x": {"a": 1, "b": 2}, "y": {"a": 3}}`),
		Entry("an array only there keeps no element", `{"l": [1, 2], "m": 3}`, [][]string{{"l", "?"}},
			`{"l": []}`),
		Entry("a scalar where an object was expected is kept", `{"a": "text"}`, [][]string{{"a", "b"}}, `{"a": "text"}`),
	)

	It("keeps no key a requester wrote: objects with labels of their own leave no term behind", func() {
		// A policy that walks the labels (some k, v in ...labels) and reads one
		// by name: every label key is the requester's to choose.
		read := &InputPaths{}
		read.addParts([]part{{key: "metadata"}, {key: "labels"}, {any: true}})
		read.addParts([]part{{key: "metadata"}, {key: "labels"}, {key: "team"}})
		read.seal()
		project := func(i int) ast.Value {
			labels := map[string]any{"team": "a", "trial-" + strconv.Itoa(i): "x"}
			v, err := projectValue(map[string]any{"metadata": map[string]any{"labels": labels}}, read)
			Expect(err).NotTo(HaveOccurred())
			return v
		}
		Expect(project(0).String()).To(Equal(`{"metadata": {"labels": {"team": "a", "trial-0": "x"}}}`))
		before := keptKeyTerms()
		for i := range 1000 {
			project(i)
		}
		Expect(keptKeyTerms()).To(Equal(before))
	})

	It("keeps at most maxKeyTerms names, whoever hands keyTerm a key of its own", func() {
		kept := keyTerm("podSets")
		// The names handed here leave with the spec, so that the table's
		// other specs are not run against a full table.
		DeferCleanup(func() {
			keyTerms.Range(func(k, _ any) bool {
				if strings.HasPrefix(k.(string), "handed-") {
					keyTerms.Delete(k)
					keyTermCount.Add(-1)
				}
				return true
			})
		})
		for i := range 2 * maxKeyTerms {
			k := "handed-" + strconv.Itoa(i)
			Expect(keyTerm(k).String()).To(Equal(strconv.Quote(k)))
		}
		Expect(keptKeyTerms()).To(BeNumerically("<=", maxKeyTerms))
		Expect(keyTerm("podSets")).To(BeIdenticalTo(kept), "a name kept before stays shared")
	})

	It("renders a kind's spec paths again only when they change, and each shape as its own", func() {
		jobSet := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
		one := [][]any{{"spec", "replicatedJobs", 0, "template", "spec"}}
		two := [][]any{{"spec", "replicatedJobs", 0, "template", "spec"}, {"spec", "replicatedJobs", 1, "template", "spec"}}
		first := pathsTermOf(jobSet, jobPaths, one)
		Expect(pathsTermOf(jobSet, jobPaths, [][]any{{"spec", "replicatedJobs", 0, "template", "spec"}})).To(BeIdenticalTo(first))
		for range 2 {
			Expect(pathsTermOf(jobSet, jobPaths, two).String()).To(Equal(pathsTerm(two).String()))
			Expect(pathsTermOf(jobSet, jobPaths, one).String()).To(Equal(`[["spec", "replicatedJobs", 0, "template", "spec"]]`))
		}
		// A kind outside the catalog is rendered each time, never kept.
		other := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
		Expect(pathsTermOf(other, podPaths, one)).NotTo(BeIdenticalTo(pathsTermOf(other, podPaths, one)))
		Expect(lastPaths).NotTo(HaveKey(other))
	})

	It("returns a term the projection leaves unchanged as it is, without a copy", func() {
		read := &InputPaths{}
		read.addParts([]part{{any: true}, {key: "a"}})
		read.addParts([]part{{any: true}, {key: "b"}})
		t := ast.MustParseTerm(`[{"a": 1, "b": {"c": 2}}]`)
		Expect(projectTerm(t, read)).To(BeIdenticalTo(t))
		only := &InputPaths{}
		only.add([]string{"x"})
		Expect(projectTerm(ast.MustParseTerm(`{"x": 1, "y": 2}`), only).String()).To(Equal(`{"x": 1}`))
	})
})

// keptKeyTerms is how many names keyTerm keeps.
func keptKeyTerms() int {
	n := 0
	keyTerms.Range(func(any, any) bool { n++; return true })
	return n
}
