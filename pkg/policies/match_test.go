package policies_test

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// matchPolicy is a policy that always denies, with the given custom.match YAML
// (indented under "match:"), so that a finding shows that it applied.
func matchPolicy(pkg, match string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# METADATA\n# title: %s\n# custom:\n#   enforcement: deny\n", pkg)
	if match != "" {
		b.WriteString("#   match:\n")
		for line := range strings.SplitSeq(strings.TrimSpace(match), "\n") {
			b.WriteString("#     " + line + "\n")
		}
	}
	fmt.Fprintf(&b, "package %s\n\ndeny contains \"applies\" if true\n", pkg)
	return b.String()
}

var _ = Describe("custom.match", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	load := func(files map[string]string) *policies.Engine {
		writeFiles(dir, files)
		return loadedEngine(dir)
	}
	It("evaluates only the policies whose kinds, operations, namespaces and selectors match", func() {
		e := load(map[string]string{
			"any.rego":     matchPolicy("m.any", ""),
			"jobs.rego":    matchPolicy("m.jobs", "kinds:\n- apiGroups: [batch]\n  kinds: [Job]"),
			"jobsets.rego": matchPolicy("m.jobsets", "kinds:\n- apiGroups: [jobset.x-k8s.io]\n  kinds: [JobSet]"),
			"create.rego":  matchPolicy("m.create", "operations: [CREATE]"),
			"update.rego":  matchPolicy("m.update", "operations: [UPDATE]"),
			"teams.rego":   matchPolicy("m.teams", "namespaces: [team-*]"),
			"notml.rego":   matchPolicy("m.notml", "excludedNamespaces: [ml]"),
			"gpu.rego":     matchPolicy("m.gpu", "namespaceSelector:\n  matchLabels: {hardware: gpu}"),
			"byname.rego":  matchPolicy("m.byname", "namespaceSelector:\n  matchLabels: {kubernetes.io/metadata.name: team-a}"),
			"trained.rego": matchPolicy("m.trained", "labelSelector:\n  matchExpressions:\n  - {key: stage, operator: In, values: [training]}"),
			"allkind.rego": matchPolicy("m.allkind", "kinds:\n- apiGroups: ['*']\n  kinds: ['*']"),
			"onekind.rego": matchPolicy("m.onekind", "kinds:\n- {group: batch, kind: Job}"),
		})
		cluster := snapshot(namespace("team-a", map[string]string{"hardware": "gpu"}, nil), namespace("ml", nil, nil))

		job := fixtures.Job("team-a", "j").Queue("lq").Label("stage", "training").Obj()
		Expect(rules(validate(e, createRequest(job), cluster))).To(ConsistOf(
			"m.any/deny", "m.jobs/deny", "m.create/deny", "m.teams/deny", "m.notml/deny", "m.gpu/deny",
			"m.byname/deny", "m.trained/deny", "m.allkind/deny", "m.onekind/deny"))

		js := fixtures.JobSet("ml", "js").Queue("lq").Obj()
		Expect(rules(validate(e, createRequest(js), cluster))).To(ConsistOf(
			"m.any/deny", "m.jobsets/deny", "m.create/deny", "m.allkind/deny"))

		update := createRequest(fixtures.Job("ml", "j").Queue("lq").Obj())
		update.Operation = admissionv1.Update
		update.OldObject = update.Object.DeepCopy()
		Expect(rules(validate(e, update, cluster))).To(ConsistOf("m.any/deny", "m.jobs/deny", "m.update/deny", "m.allkind/deny", "m.onekind/deny"))
	})

	It("matches a namespace the view does not know by its name only", func() {
		e := load(map[string]string{
			"byname.rego": matchPolicy("m.byname", "namespaceSelector:\n  matchLabels: {kubernetes.io/metadata.name: new}"),
			"gpu.rego":    matchPolicy("m.gpu", "namespaceSelector:\n  matchLabels: {hardware: gpu}"),
		})
		job := fixtures.Job("new", "j").Queue("lq").Obj()
		Expect(rules(validate(e, createRequest(job), snapshot()))).To(ConsistOf("m.byname/deny"))
	})

	It("does not evaluate at all when no policy applies, whatever the input", func() {
		e := load(map[string]string{
			"jobsets.rego": matchPolicy("m.jobsets", "kinds:\n- apiGroups: [jobset.x-k8s.io]\n  kinds: [JobSet]"),
		})
		plan := e.Plan(&policies.Subject{Kind: schema.GroupKind{Group: "batch", Kind: "Job"}, Operation: admissionv1.Create, Namespace: "ml"})
		Expect(plan.Empty()).To(BeTrue())
		// A Job whose summary cannot be built is not even read.
		job := fixtures.Job("ml", "j").Queue("lq").Obj()
		job.Object["spec"] = "not an object"
		Expect(validate(e, createRequest(job), snapshot()).Violations).To(BeEmpty())
	})

	It("keeps being right when the subset cache is full, policy by policy", func() {
		defer policies.SetMaxSubsets(1)()
		files := map[string]string{}
		for i := range 4 {
			files[fmt.Sprintf("p%d.rego", i)] = matchPolicy(fmt.Sprintf("m.p%d", i), fmt.Sprintf("namespaces: [ns-%d, shared]", i))
		}
		e := load(files)
		for i := range 4 {
			job := fixtures.Job(fmt.Sprintf("ns-%d", i), "j").Queue("lq").Obj()
			Expect(rules(validate(e, createRequest(job), snapshot()))).To(ConsistOf(fmt.Sprintf("m.p%d/deny", i)))
		}
		job := fixtures.Job("shared", "j").Queue("lq").Obj()
		Expect(rules(validate(e, createRequest(job), snapshot()))).To(HaveLen(4))
	})

	It("indexes a thousand policies so that a request only pays for the ones that match", func() {
		files := map[string]string{}
		for i := range 1000 {
			files[fmt.Sprintf("p%04d.rego", i)] = matchPolicy(fmt.Sprintf("m.p%d", i),
				"kinds:\n- apiGroups: [jobset.x-k8s.io]\n  kinds: [JobSet]")
		}
		files["job.rego"] = matchPolicy("m.job", "kinds:\n- apiGroups: [batch]\n  kinds: [Job]")
		e := load(files)
		plan := e.Plan(&policies.Subject{Kind: schema.GroupKind{Group: "batch", Kind: "Job"}, Operation: admissionv1.Create})
		Expect(plan.Policies()).To(HaveLen(1))
		Expect(plan.Policies()[0].ID).To(Equal("m.job"))
	})

	DescribeTable("refuses a match it cannot honour, with file and line",
		func(match, want string) {
			writeFiles(dir, map[string]string{"bad.rego": matchPolicy("m.bad", match)})
			e, _ := newEngine(dir)
			err := e.Load()
			Expect(err).To(MatchError(ContainSubstring(want)))
			Expect(err).To(MatchError(ContainSubstring("bad.rego:")))
		},
		Entry("a misspelt key", "namespaceSelecter: {}", `unknown field "namespaceSelecter"`),
		Entry("an operation policies never see", "operations: [DELETE]", `"DELETE" is not CREATE or UPDATE`),
		Entry("a kind kueue-guard does not judge", "kinds:\n- apiGroups: [apps]\n  kinds: [DaemonSet]", `"DaemonSet" is not a workload kind`),
		Entry("a kinds entry without groups", "kinds:\n- kinds: [Job]", "needs apiGroups and kinds"),
		Entry("a kinds entry mixing both forms", "kinds:\n- {group: batch, kinds: [Job]}", "not a mix"),
		Entry("a namespace glob in the middle", "namespaces: [te*m]", "must be a name or a prefix ending in *"),
		Entry("an invalid selector", "labelSelector:\n  matchExpressions:\n  - {key: a, operator: Bogus}", "labelSelector"),
	)
})
