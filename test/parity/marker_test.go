package parity

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"
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
	return out
}

func merge(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
