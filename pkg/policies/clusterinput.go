package policies

import (
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
)

// The cluster's parts of the input: input.namespace, input.localQueue and
// input.clusterQueue, built from the view's objects (and cached by fragments).

func namespaceTerm(name string, ns *corev1.Namespace) *ast.Term {
	var labels, annotations map[string]string
	if ns != nil {
		labels, annotations = ns.Labels, ns.Annotations
	}
	return ast.ObjectTerm(
		item("name", str(name)),
		item("labels", stringMapTerm(labels)),
		item("annotations", stringMapTerm(annotations)),
	)
}

// stopPolicyTerm renders an unset stopPolicy as Kueue's default, None, so that
// policies compare against one value.
func stopPolicyTerm(p *kueue.StopPolicy) *ast.Term {
	if p == nil || *p == "" {
		return str(string(kueue.None))
	}
	return str(string(*p))
}

// activeTerm reads the Active condition: true, false, or null before Kueue has
// reported it.
func activeTerm(conds []metav1.Condition, conditionType string) *ast.Term {
	c := meta.FindStatusCondition(conds, conditionType)
	if c == nil {
		return nullTerm
	}
	return boolTerm(c.Status == metav1.ConditionTrue)
}

func localQueueUsageTerm(usage []kueue.LocalQueueFlavorUsage) *ast.Term {
	var out []*ast.Term
	for _, f := range usage {
		for _, r := range f.Resources {
			out = append(out, ast.ObjectTerm(
				item("flavor", str(string(f.Name))),
				item("resource", str(string(r.Name))),
				item("total", quantityTerm(r.Total)),
			))
		}
	}
	return ast.ArrayTerm(out...)
}

func localQueueTerm(lq *kueue.LocalQueue) *ast.Term {
	st := lq.Status
	status := ast.ObjectTerm(
		item("active", activeTerm(st.Conditions, kueue.LocalQueueActive)),
		item("pendingWorkloads", intTerm(st.PendingWorkloads)),
		item("reservingWorkloads", intTerm(st.ReservingWorkloads)),
		item("admittedWorkloads", intTerm(st.AdmittedWorkloads)),
		item("flavorsUsage", localQueueUsageTerm(st.FlavorsUsage)),
		item("flavorsReservation", localQueueUsageTerm(st.FlavorsReservation)),
	)
	return ast.ObjectTerm(
		item("name", str(lq.Name)),
		item("clusterQueue", str(string(lq.Spec.ClusterQueue))),
		item("stopPolicy", stopPolicyTerm(lq.Spec.StopPolicy)),
		item("status", status),
	)
}

type flavorResource struct{ flavor, resource string }

func usageIndex(usage []kueue.FlavorUsage) map[flavorResource]resource.Quantity {
	m := make(map[flavorResource]resource.Quantity)
	for _, f := range usage {
		for _, r := range f.Resources {
			m[flavorResource{string(f.Name), string(r.Name)}] = r.Total
		}
	}
	return m
}

// resourceTotals is one resource of a ClusterQueue over all its flavors.
type resourceTotals struct {
	flavors            []string
	known              bool
	max, largest, free resource.Quantity
}

// resourcesTerm sums, per resource, what a quota policy would otherwise compute
// in Rego on every request: the flavors that have quota for it (in spec order),
// and over their capacity (nil when unknown) the most the queue can ever give,
// the most one flavor can, and what is free now (capacity minus the larger of
// used and reserved, never below 0, summed over the flavors).
func resourcesTerm(cq *kueue.ClusterQueue, caps []cluster.Capacity, used, reserved map[flavorResource]resource.Quantity) *ast.Term {
	capOf := make(map[flavorResource]resource.Quantity, len(caps))
	totals := map[string]*resourceTotals{}
	get := func(r string) *resourceTotals {
		t := totals[r]
		if t == nil {
			t = &resourceTotals{}
			totals[r] = t
		}
		return t
	}
	for _, c := range caps {
		key := flavorResource{c.Flavor, string(c.Resource)}
		capOf[key] = c.Max
		t := get(key.resource)
		t.known = true
		t.max.Add(c.Max)
		if c.Max.Cmp(t.largest) > 0 {
			t.largest = c.Max.DeepCopy()
		}
	}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			for _, r := range f.Resources {
				key := flavorResource{string(f.Name), string(r.Name)}
				t := get(key.resource)
				t.flavors = append(t.flavors, key.flavor)
				c, ok := capOf[key]
				if !ok {
					continue
				}
				taken := used[key]
				if res := reserved[key]; res.Cmp(taken) > 0 {
					taken = res
				}
				free := c.DeepCopy()
				free.Sub(taken)
				if free.Sign() > 0 {
					t.free.Add(free)
				}
			}
		}
	}
	o := ast.NewObjectWithCapacity(len(totals))
	for r, t := range totals {
		max, largest, free := nullTerm, nullTerm, nullTerm
		if t.known {
			max, largest, free = quantityTerm(t.max), quantityTerm(t.largest), quantityTerm(t.free)
		}
		o.Insert(str(r), ast.ObjectTerm(
			item("flavors", stringsTerm(t.flavors)),
			item("max", max),
			item("largestFlavor", largest),
			item("free", free),
		))
	}
	return ast.NewTerm(o)
}

// clusterQueueTerm flattens spec.resourceGroups[].flavors[].resources[] into one
// quota per flavor and resource, joined with status.flavorsUsage (used: admitted
// workloads) and status.flavorsReservation (reserved: workloads holding quota,
// admitted or not). Missing usage is 0; an unset borrowing or lending limit is
// null, which means "unlimited" within the cohort.
func clusterQueueTerm(cq *kueue.ClusterQueue, caps []cluster.Capacity) *ast.Term {
	used := usageIndex(cq.Status.FlavorsUsage)
	reserved := usageIndex(cq.Status.FlavorsReservation)
	var quotas []*ast.Term
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			for _, r := range f.Resources {
				key := flavorResource{string(f.Name), string(r.Name)}
				quotas = append(quotas, ast.ObjectTerm(
					item("flavor", str(key.flavor)),
					item("resource", str(key.resource)),
					item("nominal", quantityTerm(r.NominalQuota)),
					item("borrowingLimit", optionalQuantityTerm(r.BorrowingLimit)),
					item("lendingLimit", optionalQuantityTerm(r.LendingLimit)),
					item("used", quantityTerm(used[key])),
					item("reserved", quantityTerm(reserved[key])),
				))
			}
		}
	}
	capacity := make([]*ast.Term, 0, len(caps))
	for _, c := range caps {
		capacity = append(capacity, ast.ObjectTerm(
			item("flavor", str(c.Flavor)),
			item("resource", str(string(c.Resource))),
			item("max", quantityTerm(c.Max)),
		))
	}
	cohort := nullTerm
	if cq.Spec.CohortName != "" {
		cohort = str(string(cq.Spec.CohortName))
	}
	return ast.ObjectTerm(
		item("name", str(cq.Name)),
		item("cohort", cohort),
		item("stopPolicy", stopPolicyTerm(cq.Spec.StopPolicy)),
		item("active", activeTerm(cq.Status.Conditions, kueue.ClusterQueueActive)),
		item("quotas", ast.ArrayTerm(quotas...)),
		item("capacity", ast.ArrayTerm(capacity...)),
		item("resources", resourcesTerm(cq, caps, used, reserved)),
		item("pendingWorkloads", intTerm(cq.Status.PendingWorkloads)),
		item("reservingWorkloads", intTerm(cq.Status.ReservingWorkloads)),
		item("admittedWorkloads", intTerm(cq.Status.AdmittedWorkloads)),
	)
}
