package parity

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"
	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	. "github.com/onsi/gomega"
)

// markerUpdates are updates of Kueue's reserved markers in an object's own
// metadata, of every kind: added to an object without them, changed and
// removed where a trusted controller wrote them, and an unrelated label
// changed beside them.
func markerUpdates() []request {
	const label, annotation = kueueconstants.PrebuiltWorkloadLabel, kueue.WorkloadAnnotation
	mark := func(u *unstructured.Unstructured) {
		u.SetLabels(merge(u.GetLabels(), label, "wl-a"))
		u.SetAnnotations(merge(u.GetAnnotations(), annotation, "wl-a"))
	}
	var out []request
	plain, marked := kinds("unmarked"), kinds("marked")
	for i := range plain {
		mark(marked[i])
		store(trusted, plain[i])
		store(trusted, marked[i])
		k := plain[i].GetKind()
		out = append(out,
			request{name: "a tenant adds Kueue's markers to a " + k, as: tenant, obj: plain[i], edit: mark},
			request{name: "a trusted controller adds Kueue's markers to a " + k, as: trusted, obj: plain[i], edit: mark},
			request{name: "a tenant points a " + k + "'s prebuilt-workload-name at another Workload", as: tenant, obj: marked[i],
				edit: func(u *unstructured.Unstructured) { u.SetLabels(merge(u.GetLabels(), label, "wl-b")) }},
			request{name: "a tenant removes Kueue's annotation from a " + k, as: tenant, obj: marked[i],
				edit: func(u *unstructured.Unstructured) {
					a := u.GetAnnotations()
					delete(a, annotation)
					u.SetAnnotations(a)
				}},
			request{name: "a tenant labels a " + k + " that carries Kueue's markers", as: tenant, obj: marked[i],
				edit: func(u *unstructured.Unstructured) { u.SetLabels(merge(u.GetLabels(), "team", "a")) }},
		)
	}
	return append(out, templateMarkerUpdates()...)
}

// templateMarkerUpdates are updates of Kueue's markers in the pod templates of
// the kinds whose pods Kueue admits (a Deployment's): where Kueue writes
// pod-suspending-parent.
func templateMarkerUpdates() []request {
	const marker = podconstants.SuspendedByParentAnnotation
	var out []request
	for i, o := range kinds("tmarked") {
		in, ok := integrations.Lookup(o.GroupVersionKind().GroupKind())
		if !ok || len(in.PodTemplates) == 0 {
			continue
		}
		at := append(slices.Clone(in.PodTemplates[0]), "annotations")
		set := func(value string) func(*unstructured.Unstructured) {
			return func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedField(u.Object, value, append(at, marker)...)).To(Succeed())
			}
		}
		unset := func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, append(at, marker)...) }
		plain := kinds("tplain")[i]
		set("deployment")(o)
		store(trusted, o)
		store(trusted, plain)
		k := o.GetKind()
		out = append(out,
			request{name: "a tenant removes Kueue's marker from a " + k + "'s pod template", as: tenant, obj: o, edit: unset},
			request{name: "a trusted controller removes Kueue's marker from a " + k + "'s pod template", as: trusted, obj: o, edit: unset},
			request{name: "a tenant adds Kueue's marker to a " + k + "'s pod template", as: tenant, obj: plain, edit: set("other")},
			request{name: "a tenant labels a " + k + " whose pod template carries Kueue's marker", as: tenant, obj: o,
				edit: func(u *unstructured.Unstructured) { u.SetLabels(merge(u.GetLabels(), "team", "a")) }},
		)
	}
	return out
}

func merge(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
