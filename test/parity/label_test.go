package parity

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/gomega"
)

// labelCreates are creates whose pod templates carry a queue or priority label
// that agrees, or not, with the workload's own, for every kind whose pod
// templates sit at a fixed place.
func labelCreates() []request {
	var out []request
	for _, base := range kinds("labels") {
		in, ok := integrations.Lookup(base.GroupVersionKind().GroupKind())
		if !ok || len(in.PodTemplates) == 0 {
			continue
		}
		k := base.GetKind()
		variant := func(suffix string, own map[string]string, templates ...map[string]string) *unstructured.Unstructured {
			o := fixtures.Object{Unstructured: base.DeepCopy()}
			for key, v := range own {
				o.Label(key, v)
			}
			for t, labels := range templates {
				for key, v := range labels {
					path := append(slices.Clone(in.PodTemplates[t]), "labels", key)
					Expect(unstructured.SetNestedField(o.Object, v, path...)).To(Succeed())
				}
			}
			o.SetName(base.GetName() + "-" + suffix)
			return o.Obj()
		}
		q, p := integrations.QueueNameLabel, integrations.PriorityClassLabel
		other := map[string]string{q: "other-queue"}
		own := map[string]string{q: "own-queue"}
		out = append(out,
			request{name: "a tenant's " + k + " whose pod template names another queue", as: tenant,
				obj: variant("mismatch", own, other)},
			request{name: "a tenant's " + k + " whose pod template names its queue", as: tenant,
				obj: variant("match", own, own)},
			request{name: "a tenant's " + k + " queued in its pod template only", as: tenant,
				obj: variant("template", nil, other)},
			request{name: "a tenant's " + k + " whose pod template names another priority class", as: tenant,
				obj: variant("priority", map[string]string{q: "own-queue", p: "low"}, map[string]string{p: "high"})},
			request{name: "a trusted controller's " + k + " whose pod template names another queue", as: trusted,
				obj: variant("trusted", own, other)},
		)
		if len(in.PodTemplates) > 1 {
			out = append(out, request{name: "a tenant's " + k + " whose two templates name two queues", as: tenant,
				obj: variant("two", nil, own, other)})
		}
	}
	return out
}
