package policies_test

import (
	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// trickyReads are policies that reach the fields they judge the ways the input
// analysis must follow or give up on: an element bound to a variable, a
// function's parameter, a function's value, a value put in a rule's value, a
// computed object.get key, a parameter given twice, every, a type check, a
// built-in over a whole value. Each denies on a field a projection that missed
// it would leave out.
var trickyReads = map[string]string{
	"escape.rego": `package tricky.escape
envs contains c.env if {
	some pod in input.workload.podSpecs
	some c in pod.containers
}
deny contains "a container runs with DEBUG" if {
	some env in envs
	some e in env
	e.name == "DEBUG"
}`,
	"value.rego": `package tricky.value
first(pod) := pod.containers[0]
deny contains "an image without a tag" if {
	some pod in input.workload.podSpecs
	not contains(first(pod).image, ":")
}`,
	"computed.rego": `package tricky.computed
field(c, k) := object.get(c, k, "")
deny contains "an image always pulled" if {
	some pod in input.workload.podSpecs
	some c in pod.containers
	field(c, "imagePullPolicy") == "Always"
}`,
	"twice.rego": `package tricky.twice
same(x, x) := true
deny contains "an update that leaves the pod template as it was" if {
	input.request.operation == "UPDATE"
	same(input.object.spec.template, input.oldObject.spec.template)
}`,
	"every.rego": `package tricky.every
deny contains "only secrets in the environment" if {
	some pod in input.workload.podSpecs
	some c in pod.containers
	c.env
	every e in c.env { startswith(e.name, "SECRET_") }
}`,
	"typecheck.rego": `package tricky.typecheck
deny contains "a sidecar with resources" if {
	some pod in input.workload.podSpecs
	some c in pod.initContainers
	c.restartPolicy == "Always"
	is_object(c.resources)
}`,
	"builtin.rego": `package tricky.builtin
names := [c.name | some pod in input.workload.podSpecs; some c in pod.containers]
deny contains "two containers of one name" if count(names) != count({n | some n in names})
deny contains "a command too long" if {
	some pod in input.workload.podSpecs
	some c in pod.containers
	count(json.marshal(c.command)) > 40
}`,
}

var _ = Describe("The input built for what a set reads", func() {
	It("gives every tricky policy the answer it gives on the whole input", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		writeFiles(dir, trickyReads)
		fast := policies.NewStep(loadedEngine(dir))
		full := loadedEngine(dir, noDecisionCache)
		view := gpuCluster("2")
		var reqs []*admission.Request
		for _, name := range []string{"a", "b"} {
			base := gpuJob("tricky-"+name, 2, "1")
			base.SetUID(uid("tricky-" + name))
			for _, change := range trickyChanges() {
				obj := base.DeepCopy()
				change(fixtures.Object{Unstructured: obj})
				reqs = append(reqs, createRequest(obj), updateRequest(base, obj))
			}
		}
		reported := map[string]bool{}
		for round := range 2 {
			for i, req := range reqs {
				want := reference(ctx, full, req, view)
				Expect(policyFindings(validateWith(fast, req, view))).To(Equal(want),
					"round %d, request %d (%s)", round, i, req.Operation)
				for _, f := range want {
					reported[f] = true
				}
			}
		}
		// Every policy must have denied something, or it proves nothing.
		Expect(reported).To(HaveLen(len(trickyReads) + 1))
	})
})

// trickyChanges edit a Job's first container, or add to its pod spec, so that
// one tricky policy denies it (and the unchanged Job denies none).
func trickyChanges() []func(o fixtures.Object) {
	containers := []string{"spec", "template", "spec", "containers"}
	initContainers := []string{"spec", "template", "spec", "initContainers"}
	container := func(edit func(c map[string]any)) func(o fixtures.Object) {
		return func(o fixtures.Object) { o.FirstContainer(edit, containers...) }
	}
	env := func(names ...string) func(o fixtures.Object) {
		return container(func(c map[string]any) {
			var vars []any
			for _, n := range names {
				vars = append(vars, map[string]any{"name": n, "value": "1"})
			}
			c["env"] = vars
		})
	}
	return []func(o fixtures.Object){
		func(fixtures.Object) {},
		env("LOG_LEVEL", "DEBUG"), env("LOG_LEVEL"), env("SECRET_TOKEN"), env("SECRET_TOKEN", "HOME"),
		container(func(c map[string]any) { c["image"] = "trainer" }),
		container(func(c map[string]any) { c["imagePullPolicy"] = "Always" }),
		container(func(c map[string]any) { c["command"] = []any{"python", "-m", "train", "--epochs=100", "--lr=0.1"} }),
		container(func(c map[string]any) { c["command"] = []any{"python"} }),
		func(o fixtures.Object) { o.Containers(func(l []any) []any { return append(l, l[0]) }, containers...) },
		func(o fixtures.Object) {
			o.Set([]any{map[string]any{"name": "proxy", "image": "envoy:1", "restartPolicy": "Always"}}, initContainers...)
		},
		func(o fixtures.Object) {
			o.Set([]any{map[string]any{"name": "proxy", "image": "envoy:1", "restartPolicy": "Always",
				"resources": map[string]any{}}}, initContainers...)
		},
	}
}
