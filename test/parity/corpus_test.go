package parity

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/gomega"
)

// request is one admission request of the corpus, sent as a dry run: a CREATE of
// obj, or an UPDATE of the stored object named by obj, changed by edit.
type request struct {
	name string
	as   client.Client
	obj  *unstructured.Unstructured
	edit func(*unstructured.Unstructured) // nil: a CREATE
}

// owner is a controller owner reference a request's object may carry.
type owner struct {
	what, apiVersion, kind string
	controller             bool
}

var owners = []owner{
	{"no owner", "", "", false},
	{"a Job it is not part of", "batch/v1", "Job", true},
	{"a JobSet", "jobset.x-k8s.io/v1alpha2", "JobSet", true},
	{"a RayJob (a kind Kueue may ignore)", "ray.io/v1", "RayJob", true},
	{"a ReplicaSet (Kueue walks through it)", "apps/v1", "ReplicaSet", true},
	{"a Job, not as its controller", "batch/v1", "Job", false},
	{"a ConfigMap", "v1", "ConfigMap", true},
	{"a Job of a version Kueue does not match", "batch/v2", "Job", true},
}

// parents are the owners' objects, stored, by kind: Kueue's webhooks look an
// owner up, and refuse a child whose owner does not exist.
var parents = map[string]*unstructured.Unstructured{}

// storeParents creates a parent of every owner kind, and a second Job.
func storeParents() {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": "parent"}}}
	for _, p := range append(kinds("parent"), cm) {
		switch p.GetKind() {
		case "Job", "JobSet", "RayJob", "ReplicaSet", "ConfigMap":
			p.SetName("parent")
			store(admin, p)
			parents[p.GetKind()] = p
		}
	}
	other := kinds("other")[0]
	store(admin, other)
	parents["other Job"] = other
}

// kinds are one object of every kind the fixtures build, and a ReplicaSet.
func kinds(name string) []*unstructured.Unstructured { return kindsIn(ns, name) }

func kindsIn(namespace, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range fixtures.EveryKind(namespace) {
		o.SetName(name + "-" + o.GetName())
		if o.GetKind() == "LeaderWorkerSet" {
			// As the API server defaults them: Kueue's LWS webhook (the test's
			// Kueue integrates LWS) writes back its typed copy, empty strings
			// and all, and the CRD refuses an empty rollout strategy.
			o.Set("RollingUpdate", "spec", "rolloutStrategy", "type").Set("LeaderCreated", "spec", "startupPolicy")
		}
		out = append(out, o.Obj())
	}
	rs := fixtures.Deployment(namespace, name+"-rs").Obj()
	rs.SetKind("ReplicaSet")
	return append(out, rs)
}

// defaultingNS has a default queue and priority class by its annotations.
const defaultingNS = "parity-defaults"

// defaulting are creates in defaultingNS, whose answers (the object as the API
// server would store it) are compared: unqueued, queued, prioritised objects
// of every kind, a trusted controller's part of a Job, a RayJob on an
// existing cluster.
func defaulting() []request {
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: defaultingNS,
		Annotations: map[string]string{admission.DefaultQueueAnnotation: "team-queue",
			admission.DefaultPriorityClassAnnotation: "high"}}})).To(Succeed())
	workloads := func(name string) []*unstructured.Unstructured {
		all := kindsIn(defaultingNS, name)
		return all[:len(all)-1] // not the ReplicaSet: not a workload
	}
	var out []request
	for _, obj := range workloads("unqueued") {
		out = append(out, request{name: "a tenant's unqueued " + obj.GetKind(), as: tenant, obj: obj})
	}
	for _, obj := range workloads("queued") {
		out = append(out, request{name: "a tenant's queued " + obj.GetKind(), as: tenant,
			obj: fixtures.Object{Unstructured: obj}.Queue("own-queue").Obj()})
	}
	for _, obj := range workloads("prio") {
		out = append(out, request{name: "a tenant's " + obj.GetKind() + " with its own priority class", as: tenant,
			obj: fixtures.Object{Unstructured: obj}.Label(integrations.PriorityClassLabel, "low").Obj()})
	}
	parent := kindsIn(defaultingNS, "parent")[0]
	store(trusted, parent)
	child := kindsIn(defaultingNS, "child")[0]
	child.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: parent.GetName(),
		UID: parent.GetUID(), Controller: new(true)}})
	out = append(out, request{name: "a trusted controller's Job under a Job", as: trusted, obj: child})
	rj := onExistingCluster(fixtures.RayJob(defaultingNS, "on-cluster").Obj())
	return append(out, request{name: "a tenant's RayJob on an existing cluster", as: tenant, obj: rj})
}

// withOwner sets obj's owner reference to the stored parent of o's kind (or
// to parent, when given).
func withOwner(obj *unstructured.Unstructured, o owner, parent ...*unstructured.Unstructured) *unstructured.Unstructured {
	if o.kind != "" {
		p := parents[o.kind]
		if len(parent) > 0 {
			p = parent[0]
		}
		obj.SetOwnerReferences(nil)
		ref := map[string]any{"apiVersion": o.apiVersion, "kind": o.kind, "name": p.GetName(), "uid": string(p.GetUID()),
			"controller": o.controller}
		Expect(unstructured.SetNestedSlice(obj.Object, []any{ref}, "metadata", "ownerReferences")).To(Succeed())
	}
	return obj
}

// buildCorpus creates the objects the updates start from and returns every
// request.
func buildCorpus() []request {
	storeParents()
	var out []request
	who := map[client.Client]string{tenant: "a tenant", trusted: "a trusted controller"}
	for i, o := range owners {
		for _, as := range []client.Client{tenant, trusted} {
			for _, obj := range kinds(fmt.Sprintf("new%d", i)) {
				out = append(out, request{name: fmt.Sprintf("%s creates a %s with %s", who[as], obj.GetKind(), o.what),
					as: as, obj: withOwner(obj, o)})
			}
		}
	}
	out = append(append(out, ownerUpdates()...), resumes()...)
	return append(append(append(out, queueUpdates()...), markerUpdates()...), labelCreates()...)
}

// ownerUpdates are updates of stored objects' controller owners.
func ownerUpdates() []request {
	var out []request
	job := owners[1]
	plain, owned := kinds("plain"), kinds("owned")
	for i := range plain {
		store(trusted, plain[i])
		store(trusted, withOwner(owned[i], job))
		k := plain[i].GetKind()
		out = append(out,
			request{name: "a tenant adds a Job controller owner to a " + k, as: tenant, obj: plain[i],
				edit: func(u *unstructured.Unstructured) { withOwner(u, job) }},
			request{name: "a trusted controller adds a Job controller owner to a " + k, as: trusted, obj: plain[i],
				edit: func(u *unstructured.Unstructured) { withOwner(u, job) }},
			request{name: "a tenant labels a " + k + " a Job owns", as: tenant, obj: owned[i],
				edit: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "a"}) }},
			request{name: "a tenant points a " + k + "'s controller owner at another Job", as: tenant, obj: owned[i],
				edit: func(u *unstructured.Unstructured) { withOwner(u, job, parents["other Job"]) }},
			request{name: "a tenant removes a " + k + "'s owner", as: tenant, obj: owned[i],
				edit: func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) }},
		)
	}
	return out
}

// resumes are updates that take a held workload out of its hold, of every
// kind held by a suspend field or Kueue's scheduling gate.
func resumes() []request {
	var out []request
	for _, base := range kinds("held") {
		in, ok := integrations.Lookup(base.GroupVersionKind().GroupKind())
		if !ok || (in.Suspension.Field == nil && in.Suspension.SchedulingGate == "") {
			continue
		}
		k := base.GetKind()
		queued := fixtures.Object{Unstructured: base.DeepCopy()}.Queue("lq").Held().Obj()
		unqueued := fixtures.Object{Unstructured: base.DeepCopy()}.Held().Obj()
		unqueued.SetName(base.GetName() + "-unqueued")
		store(trusted, queued)
		store(trusted, unqueued)
		out = append(out,
			request{name: "a tenant resumes a queued " + k, as: tenant, obj: queued, edit: release},
			request{name: "a trusted controller resumes a queued " + k, as: trusted, obj: queued, edit: release},
			request{name: "a tenant labels a queued, held " + k, as: tenant, obj: queued,
				edit: func(u *unstructured.Unstructured) { fixtures.Object{Unstructured: u}.Label("team", "a") }},
			request{name: "a tenant resumes an unqueued " + k, as: tenant, obj: unqueued, edit: release},
			request{name: "a tenant removes a queued " + k + "'s queue and resumes it", as: tenant, obj: queued,
				edit: func(u *unstructured.Unstructured) {
					fixtures.Object{Unstructured: u}.Label(integrations.QueueNameLabel, "").Released()
				}},
		)
		if in.Ignorable {
			selected := onExistingCluster(fixtures.Object{Unstructured: base.DeepCopy()}.Queue("lq").Held().Obj())
			selected.SetName(base.GetName() + "-on-cluster")
			store(trusted, selected)
			out = append(out, request{name: "a tenant resumes a queued " + k + " on an existing cluster (Kueue ignores it)",
				as: tenant, obj: selected, edit: release})
		}
	}
	return out
}

// store creates obj (with the webhooks in place, as the controller would) and
// keeps the stored uid, so that updates start from what the API server holds.
func store(as client.Client, obj *unstructured.Unstructured) {
	Expect(as.Create(ctx, obj)).To(Succeed(), "storing %s %s", obj.GetKind(), obj.GetName())
	Expect(obj.GetUID()).NotTo(Equal(types.UID("")))
}
