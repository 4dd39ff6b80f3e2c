package admission_test

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the object shape check", func() {
	judge := func(obj *unstructured.Unstructured) *guard.Decision {
		in, ok := integrations.Lookup(obj.GroupVersionKind().GroupKind())
		Expect(ok).To(BeTrue())
		d := &guard.Decision{}
		req := &guard.Request{Operation: admissionv1.Create, Name: obj.GetName(), Namespace: obj.GetNamespace(), Object: obj}
		Expect(guard.ObjectShape{}.Validate(context.Background(), req, guard.Target{Integration: in}, nil, d)).To(Succeed())
		return d
	}
	// nest puts depth levels of maps under the AppWrapper's wrapped Job.
	nest := func(depth int) *unstructured.Unstructured {
		o := fixtures.AppWrapper("team", "deep").Obj()
		inner := map[string]any{}
		leaf := inner
		for range depth {
			next := map[string]any{}
			leaf["x"] = next
			leaf = next
		}
		comps, _, _ := unstructured.NestedSlice(o.Object, "spec", "components")
		comps[0].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"] = inner
		Expect(unstructured.SetNestedSlice(o.Object, comps, "spec", "components")).To(Succeed())
		return o
	}

	It("lets every catalog kind's fixture through", func() {
		for _, o := range []fixtures.Object{fixtures.Job("t", "j"), fixtures.JobSet("t", "js"), fixtures.RayJob("t", "r"),
			fixtures.AppWrapper("t", "aw"), fixtures.LeaderWorkerSet("t", "l"), fixtures.MPIJob("t", "m")} {
			Expect(judge(o.Obj()).Allowed()).To(BeTrue(), o.GetKind())
		}
	})

	It("lets an AppWrapper nested deeper than any real one through, under the limit", func() {
		Expect(judge(nest(guard.MaxObjectDepth - 20)).Allowed()).To(BeTrue())
	})

	It("denies an object nested beyond the limit, naming it", func() {
		d := judge(nest(guard.MaxObjectDepth + 1))
		Expect(d.Allowed()).To(BeFalse())
		Expect(d.Violations).To(HaveLen(1))
		Expect(d.Violations[0].Rule).To(Equal(guard.RuleObjectTooComplex))
		Expect(d.Violations[0].Message).To(ContainSubstring(`AppWrapper "deep" is nested more than 100 levels deep`))
	})

	It("denies an object with more values than the limit, without queueing them all", func() {
		o := fixtures.Job("t", "wide").Obj()
		wide := map[string]any{}
		for i := range guard.MaxObjectValues + 1 {
			wide[fmt.Sprint("k", i)] = "v"
		}
		o.Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"] = map[string]any{"annotations": wide}
		d := judge(o)
		Expect(d.Allowed()).To(BeFalse())
		Expect(d.Violations[0].Message).To(ContainSubstring("holds more than 250000 values"))
	})
})
