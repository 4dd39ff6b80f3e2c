package policies_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// policyInputDoc documents the input for policy authors, field by field.
const policyInputDoc = "../../docs/policy-input.md"

// schemaAnnotation is the METADATA that type-checks a package against the input
// schema.
const schemaAnnotation = "# METADATA\n# schemas:\n#   - input: " + policies.InputSchemaRef + "\n"

// inputSchema compiles the embedded input schema with a JSON Schema validator
// that shares no code with OPA's, as draft-07.
func inputSchema() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policies.InputSchema()))
	Expect(err).NotTo(HaveOccurred())
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	Expect(c.AddResource("input.json", doc)).To(Succeed())
	s, err := c.Compile("input.json")
	Expect(err).NotTo(HaveOccurred())
	return s
}

// instance is a policy input as the validator reads JSON.
func instance(v ast.Value) any {
	raw, err := ast.JSON(v)
	Expect(err).NotTo(HaveOccurred())
	b, err := json.Marshal(raw)
	Expect(err).NotTo(HaveOccurred())
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	Expect(err).NotTo(HaveOccurred())
	return inst
}

// schemaPaths lists the fields the schema names, as Rego refs under input
// (input.workload.podSets[_].count), resolving the schema's own $refs.
func schemaPaths() []string {
	var root map[string]any
	Expect(json.Unmarshal(policies.InputSchema(), &root)).To(Succeed())
	defs, _ := root["definitions"].(map[string]any)
	var resolve func(s map[string]any) map[string]any
	resolve = func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return resolve(defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any))
		}
		return s
	}
	var out []string
	var walk func(prefix string, s map[string]any)
	walk = func(prefix string, s map[string]any) {
		s = resolve(s)
		for _, key := range []string{"allOf", "anyOf"} {
			alts, _ := s[key].([]any)
			for _, a := range alts {
				walk(prefix, a.(map[string]any))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(prefix+"[_]", items)
		}
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			out = append(out, prefix+"."+name)
			walk(prefix+"."+name, p.(map[string]any))
		}
	}
	walk("input", root)
	slices.Sort(out)
	return slices.Compact(out)
}

var _ = Describe("The input schema", func() {
	It("type-checks an annotated policy at load: a misspelled input field refuses the set, naming the field", func() {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"typo.rego": schemaAnnotation + `package t.typo

deny contains "too many pod sets" if count(input.workload.podsets) > 1
`})
		e, _ := newEngine(dir)
		err := e.Load()
		var le *policies.LoadError
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Problems).To(HaveLen(1))
		Expect(le.Problems[0].File).To(Equal(filepath.Join(dir, "typo.rego")))
		Expect(le.Problems[0].Line).To(Equal(6))
		Expect(le.Problems[0].Message).To(HavePrefix("rego_type_error: undefined ref: input.workload.podsets"))
		Expect(le.Problems[0].Message).To(ContainSubstring(`"podSets"`), "the error says what the field is called")
		Expect(e.Ready()).To(BeFalse())

		By("and `policy test` refuses it the same way")
		writeFiles(dir, map[string]string{"typo_test.rego": "package t.typo_test\n\ntest_x if true\n"})
		_, err = policies.RunTests(context.Background(), dir, &bytes.Buffer{}, policies.TestOptions{})
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Problems[0].Message).To(HavePrefix("rego_type_error: undefined ref: input.workload.podsets"))
	})

	It("checks nested and nullable parts too", func() {
		for ref, want := range map[string]string{
			"input.clusterQueue.quotas[_].borowingLimit": `"borrowingLimit"`,
			"input.localQueue.status.flavorUsage":        `"flavorsUsage"`,
			"input.oldWorkload.totalRequest":             `"totalRequests"`,
			"input.request.userInfo.group":               `"groups"`,
			"input.namespace.label":                      `"labels"`,
			"input.request.trustedControllers":           `"trustedController"`,
		} {
			dir := GinkgoT().TempDir()
			writeFiles(dir, map[string]string{"p.rego": schemaAnnotation + "package t.p\n\ndeny contains \"x\" if " + ref + "\n"})
			e, _ := newEngine(dir)
			err := e.Load()
			Expect(err).To(MatchError(ContainSubstring("rego_type_error")), ref)
			Expect(err).To(MatchError(ContainSubstring(want)), ref)
		}
	})

	It("loads a policy that reads the input as it is, comparing nullable fields with null", func() {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"p.rego": schemaAnnotation + `package t.p

deny contains sprintf("%d pod sets", [count(input.workload.podSets)]) if {
	input.workload.totalRequests.cpu > 0
	input.namespace.labels.team == "ml"
	input.oldObject == null
	is_null(input.oldWorkload)
	input.clusterQueue.cohort == null
	some q in input.clusterQueue.quotas
	q.borrowingLimit == null
	input.localQueue.status.active == null
	input.object.metadata.name == "j"
}
`})
		e := loadedEngine(dir)
		job := fixtures.Job("ml", "j").Queue("lq").Requests("cpu", "1").Obj()
		view := snapshot(namespace("ml", map[string]string{"team": "ml"}, nil), localQueue("ml", "lq", "cq"),
			clusterQueue("cq", "", quota{flavor: "f", resource: "cpu", nominal: "8"}))
		Expect(messagesOf(validate(e, createRequest(job), view), "t.p")).To(ConsistOf("1 pod sets"))
	})

	It("leaves a policy without the annotation unchecked", func() {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"p.rego": "package t.p\n\ndeny contains \"x\" if count(input.workload.podsets) > 1\n"})
		Expect(loadedEngine(dir).Policies()).To(HaveLen(1))
	})

	Describe("agrees with BuildInput", func() {
		var schema *jsonschema.Schema
		BeforeEach(func() { schema = inputSchema() })

		// full is a view with every part of the input present: labelled
		// namespace, a stopped LocalQueue with usage, an active ClusterQueue in
		// a cohort with borrowing and lending limits.
		full := func() *cluster.Snapshot {
			cq := clusterQueue("cq", "research",
				quota{flavor: "a100", resource: gpu, nominal: "4", borrowing: "4", used: "2", reserved: "3"},
				quota{flavor: "a100", resource: "cpu", nominal: "64", lending: "8", used: "1500m"},
				quota{flavor: "a100", resource: "memory", nominal: "256Gi"},
			)
			cq.Status.PendingWorkloads, cq.Status.AdmittedWorkloads = 2, 1
			meta.SetStatusCondition(&cq.Status.Conditions, metav1.Condition{Type: kueue.ClusterQueueActive, Status: metav1.ConditionFalse, Reason: "Stopped"})
			hold := kueue.HoldAndDrain
			lq := localQueue("ml", "lq", "cq")
			lq.Spec.StopPolicy = &hold
			lq.Status.FlavorsUsage = []kueue.LocalQueueFlavorUsage{{Name: "a100", Resources: []kueue.LocalQueueResourceUsage{
				{Name: "cpu", Total: resource.MustParse("1500m")}, {Name: gpu, Total: resource.MustParse("2")},
			}}}
			meta.SetStatusCondition(&lq.Status.Conditions, metav1.Condition{Type: kueue.LocalQueueActive, Status: metav1.ConditionTrue, Reason: "Ready"})
			return snapshot(namespace("ml", map[string]string{"team": "ml"}, map[string]string{"kueue-guard.io/max-gpus": "8"}), lq, cq)
		}
		build := func(req *admission.Request, t admission.Target, view cluster.View) any {
			v, err := policies.BuildInput(context.Background(), req, t, view)
			Expect(err).NotTo(HaveOccurred())
			return instance(v)
		}
		update := func(old, updated *unstructured.Unstructured) *admission.Request {
			req := createRequest(updated)
			req.Operation = admissionv1.Update
			req.OldObject = old
			return req
		}

		DescribeTable("validates the input of",
			func(req func() *admission.Request, t admission.Target, view func() *cluster.Snapshot) {
				Expect(schema.Validate(build(req(), t, view()))).To(Succeed())
			},
			Entry("a Job on a full view", func() *admission.Request {
				req := createRequest(fixtures.Job("ml", "train").Queue("lq").Label("kueue.x-k8s.io/priority-class", "high").
					Requests("cpu", "500m").Requests("memory", "1536Mi").Requests(gpu, "2").Obj())
				req.DryRun = true
				req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}}
				return req
			}, admission.Target{TrustedController: true}, full),
			Entry("a JobSet on an empty view: null queues, an unknown namespace", func() *admission.Request {
				return createRequest(fixtures.JobSet("ml", "js").Queue("lq").Requests("cpu", "1").Obj())
			}, admission.Target{}, func() *cluster.Snapshot { return snapshot() }),
			Entry("a LocalQueue whose ClusterQueue is missing", func() *admission.Request {
				return createRequest(fixtures.RayJob("ml", "ray").Queue("lq").Obj())
			}, admission.Target{}, func() *cluster.Snapshot { return snapshot(localQueue("ml", "lq", "gone")) }),
			Entry("a ClusterQueue without a cohort", func() *admission.Request {
				return createRequest(fixtures.Deployment("ml", "web").Queue("lq").Requests("cpu", "250m").Obj())
			}, admission.Target{}, func() *cluster.Snapshot {
				return snapshot(localQueue("ml", "lq", "cq"), clusterQueue("cq", "", quota{flavor: "f", resource: "cpu", nominal: "4"}))
			}),
			Entry("an unqueued Pod", func() *admission.Request {
				return createRequest(fixtures.Pod("ml", "p").Obj())
			}, admission.Target{}, full),
			Entry("an UPDATE that grows a Job", func() *admission.Request {
				old := fixtures.Job("ml", "train").Queue("lq").Requests("cpu", "1").Obj()
				grown := old.DeepCopy()
				Expect(unstructured.SetNestedField(grown.Object, int64(4), "spec", "parallelism")).To(Succeed())
				return update(old, grown)
			}, admission.Target{}, full),
			Entry("an UPDATE whose old object cannot be summarised", func() *admission.Request {
				old := fixtures.Job("ml", "train").Queue("lq").Obj()
				Expect(unstructured.SetNestedField(old.Object, "three", "spec", "parallelism")).To(Succeed())
				return update(old, fixtures.Job("ml", "train").Queue("lq").Obj())
			}, admission.Target{}, full),
			Entry("a CronJob", func() *admission.Request {
				return createRequest(fixtures.CronJob("ml", "nightly").Queue("lq").Requests(gpu, "1").Obj())
			}, admission.Target{}, full),
		)

		It("rejects an input that differs from BuildInput's in any field, so the agreement is not vacuous", func() {
			base := func() map[string]any {
				in := build(createRequest(fixtures.Job("ml", "j").Queue("lq").Requests("cpu", "1").Obj()), admission.Target{}, full())
				Expect(schema.Validate(in)).To(Succeed())
				return in.(map[string]any)
			}
			wl := func(in map[string]any) map[string]any { return in["workload"].(map[string]any) }
			for what, mutate := range map[string]func(map[string]any){
				"a renamed field":      func(in map[string]any) { w := wl(in); w["podsets"] = w["podSets"]; delete(w, "podSets") },
				"an extra field":       func(in map[string]any) { in["extra"] = true },
				"a missing field":      func(in map[string]any) { delete(in, "oldWorkload") },
				"a null workload":      func(in map[string]any) { in["workload"] = nil },
				"a quantity as string": func(in map[string]any) { wl(in)["totalRequests"] = map[string]any{"cpu": "1"} },
				"a fractional count": func(in map[string]any) {
					wl(in)["podSets"].([]any)[0].(map[string]any)["count"] = json.Number("1.5")
				},
				"an unknown operation": func(in map[string]any) { in["request"].(map[string]any)["operation"] = "DELETE" },
			} {
				in := base()
				mutate(in)
				Expect(schema.Validate(in)).NotTo(Succeed(), what)
			}
		})

		It("names every field: each object lists all its properties as required and allows no others", func() {
			var root map[string]any
			Expect(json.Unmarshal(policies.InputSchema(), &root)).To(Succeed())
			var check func(path string, v any)
			check = func(path string, v any) {
				switch s := v.(type) {
				case map[string]any:
					if props, ok := s["properties"].(map[string]any); ok {
						Expect(s["additionalProperties"]).To(BeFalse(), path)
						var required []string
						for _, r := range s["required"].([]any) {
							required = append(required, r.(string))
						}
						var names []string
						for n := range props {
							names = append(names, n)
						}
						Expect(required).To(ConsistOf(names), path)
					}
					for k, c := range s {
						check(path+"/"+k, c)
					}
				case []any:
					for _, c := range s {
						check(path, c)
					}
				}
			}
			check("#", root)
		})
	})

	It("is documented field by field in docs/policy-input.md", func() {
		doc, err := os.ReadFile(policyInputDoc)
		Expect(err).NotTo(HaveOccurred())
		paths := schemaPaths()
		Expect(paths).To(ContainElements("input.workload.podSets[_].count", "input.clusterQueue.quotas[_].reserved"))
		for _, p := range paths {
			Expect(string(doc)).To(ContainSubstring("`"+p+"`"), "docs/policy-input.md does not document %s", p)
		}
	})
})
