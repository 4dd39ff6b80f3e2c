package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// BuildInput builds the policy input for one request:
//
//	input.request      operation, kind{group,version,kind}, namespace, name, uid,
//	                   userInfo{username,uid,groups,extra}, dryRun,
//	                   trustedController (the requester matches trust.controllers)
//	input.object       the object as received (after defaulting on the validating path)
//	input.oldObject    the old object on UPDATE, else null
//	input.workload     kind{group,version,kind}, framework, queueName, priorityClass
//	                   (both as Kueue reads them, pod templates included),
//	                   podSets[{name,count,minCount,requests}], totalRequests,
//	                   admissionUnit, unitRequests, minUnitRequests, topLevel,
//	                   grows (an UPDATE that asks Kueue for more, see workload.Grows),
//	                   podSpecPaths (where input.object keeps its pod specs)
//	                   jobSpecPaths (where it keeps the Job specs it writes)
//	                   claimsUncounted (why Kueue would not count its DRA claims)
//	input.oldWorkload  the old object's summary on UPDATE (same shape), else null
//	input.namespace    name, labels, annotations (empty when the namespace is unknown)
//	input.localQueue   name, clusterQueue, stopPolicy, status{active,
//	                   pendingWorkloads, reservingWorkloads, admittedWorkloads,
//	                   flavorsUsage[{flavor,resource,total}], flavorsReservation}, or null
//	input.clusterQueue name, cohort (null without one), stopPolicy, active,
//	                   quotas[{flavor,resource,nominal,borrowingLimit,lendingLimit,
//	                   used,reserved}], capacity[{flavor,resource,max}],
//	                   pendingWorkloads, reservingWorkloads,
//	                   admittedWorkloads, or null
//
// docs/policy-input.md describes every field for policy authors, and
// schemas/input.json is its JSON Schema (a test validates BuildInput's output
// against it): a change here changes both. Quantities are numbers in base units
// (see quantityTerm). The value is built as
// OPA terms directly, without reflection or a JSON round trip: this runs on every
// request. The LocalQueue is the one the object's queue label names.
func BuildInput(ctx context.Context, req *admission.Request, t admission.Target, view cluster.View) (ast.Value, error) {
	f, err := summarizeRequest(ctx, req, view)
	if err != nil {
		return nil, err
	}
	return buildInput(req, t, view, f, lookupNamespace(req, view), nil, nil)
}

// requestNamespace is the request's namespace, read from the view once per
// request: the match and the input both need it, and a cache read copies it.
type requestNamespace struct {
	name string
	// obj is nil when the view does not have the namespace.
	obj *corev1.Namespace
}

func lookupNamespace(req *admission.Request, view cluster.View) requestNamespace {
	ns := requestNamespace{name: req.Namespace}
	if ns.name == "" && req.Object != nil {
		ns.name = req.Object.GetNamespace()
	}
	if obj, ok := view.Namespace(ns.name); ok {
		ns.obj = obj
	}
	return ns
}

// requestFacts are the summaries of one request's objects, computed once and
// shared by the step's decisions and the input.
type requestFacts struct {
	sum, old *workload.Summary
	grows    bool
	// specEqual: an update's spec is the old object's.
	specEqual bool
}

func summarizeRequest(ctx context.Context, req *admission.Request, view cluster.View) (*requestFacts, error) {
	if req.Object == nil {
		return nil, errors.New("the request has no object")
	}
	opts := cluster.SummaryOptions(view)
	sum, err := workload.SummarizeWith(ctx, req.Object, opts)
	if err != nil {
		return nil, err
	}
	f := &requestFacts{sum: sum}
	if req.OldObject != nil && req.Operation == admissionv1.Update {
		// An old object that cannot be summarized (written by an older version
		// of a CRD, say) leaves oldWorkload null, and the update counts as
		// growing: it is judged as if the workload were new.
		// An update that changes nothing but what the API server keeps
		// (a server-side apply of the same manifest, a no-op patch) has the
		// old object's summary: summarizing is a pure function of the
		// object, and the two are equal but for what it never reads.
		f.specEqual = jsonEqual(req.OldObject.Object["spec"], req.Object.Object["spec"])
		if f.specEqual && equalOutsideSpec(req.OldObject.Object, req.Object.Object) {
			f.old = sum
		} else if old, err := workload.SummarizeWith(ctx, req.OldObject, opts); err == nil {
			f.old = old
		}
		f.grows = workload.Grows(f.old, sum)
	}
	return f, nil
}

// serverKept are the metadata fields the API server writes on every update,
// which no summary reads.
var serverKept = map[string]bool{"managedFields": true, "resourceVersion": true, "generation": true}

// equalOutsideSpec reports whether two objects, each with its metadata, are
// equal but for spec and serverKept.
func equalOutsideSpec(a, b map[string]any) bool {
	ma, okA := a["metadata"].(map[string]any)
	mb, okB := b["metadata"].(map[string]any)
	return okA && okB &&
		equalExcept(a, b, func(k string) bool { return k == "spec" || k == "metadata" }) &&
		equalExcept(ma, mb, func(k string) bool { return serverKept[k] })
}

// equalExcept compares two maps on the keys skip does not name.
func equalExcept(a, b map[string]any, skip func(string) bool) bool {
	for k, v := range a {
		if w, ok := b[k]; !skip(k) && (!ok || !jsonEqual(v, w)) {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !skip(k) {
			return false
		}
	}
	return true
}

// buildInput builds the input; frags, when not nil, caches the cluster's parts.
// paths, when not nil, are the parts the policies read: the others are left out
// (undefined, as they are to a policy that does not read them) and never built.
func buildInput(req *admission.Request, t admission.Target, view cluster.View, f *requestFacts, ns requestNamespace, frags *fragments, paths *InputPaths) (ast.Value, error) {
	// The input schema promises policies input.object.metadata: the API
	// server always sends it, and an object without it is refused here rather
	// than judged by policies that read it as undefined.
	if _, ok := req.Object.Object["metadata"].(map[string]any); !ok {
		return nil, errors.New("object: metadata is missing or not an object")
	}
	in := fields{paths: paths}
	var err error
	for _, o := range []struct {
		key string
		obj *unstructured.Unstructured
	}{{"object", req.Object}, {"oldObject", req.OldObject}} {
		in.add(o.key, func(p *InputPaths) *ast.Term {
			v, e := objectValue(o.obj, req.ManagedFieldsJSON(o.obj), p)
			if e != nil {
				err = fmt.Errorf("%s: %w", o.key, e)
			}
			return ast.NewTerm(v)
		})
	}
	if err != nil {
		return nil, err
	}
	in.add("request", func(p *InputPaths) *ast.Term { return requestTerm(req, t.TrustedController, p) })
	in.add("workload", func(p *InputPaths) *ast.Term { return summaryTerm(f.sum, f.grows, req.Object, p) })
	in.add("oldWorkload", func(p *InputPaths) *ast.Term {
		if f.old == nil {
			return nullTerm
		}
		return summaryTerm(f.old, false, req.OldObject, p)
	})
	// The cluster's parts are projected once per object version (fragments).
	in.add("namespace", func(p *InputPaths) *ast.Term { return frags.namespace(ns.name, ns.obj, p) })
	if paths.reads("localQueue") || paths.reads("clusterQueue") {
		lqTerm, cqTerm := queueTerms(view, ns.name, f.sum.QueueName, frags, paths)
		in.add("localQueue", func(*InputPaths) *ast.Term { return lqTerm })
		in.add("clusterQueue", func(*InputPaths) *ast.Term { return cqTerm })
	}
	return in.object(), nil
}

// fields builds an input object with only the keys paths reads: a key no
// policy reads is never built (nil paths: every key). Each build is given the
// paths read under its key, to build only those in turn.
type fields struct {
	paths *InputPaths
	items *pairList // from the pool at the first key
}

func (f *fields) add(key string, build func(p *InputPaths) *ast.Term) {
	if f.paths.reads(key) {
		v := build(f.paths.child(key))
		if f.items == nil {
			f.items = getPairs()
		}
		f.items.add(keyTerm(key), v)
	}
}

// set adds a key whose value is cheap or already built, projected to what is
// read under it.
func (f *fields) set(key string, v func() *ast.Term) {
	f.add(key, func(p *InputPaths) *ast.Term { return projectTerm(v(), p) })
}

func (f *fields) object() ast.Object {
	if f.items == nil {
		return ast.NewObject()
	}
	return f.items.object()
}

func (f *fields) term() *ast.Term { return ast.NewTerm(f.object()) }

// queueTerms are the LocalQueue the workload names and its ClusterQueue, or
// null, projected to what paths (the input's) reads of them.
func queueTerms(view cluster.View, namespace, queue string, frags *fragments, paths *InputPaths) (lq, cq *ast.Term) {
	lq, cq = nullTerm, nullTerm
	if queue == "" {
		return lq, cq
	}
	if l, ok := view.LocalQueue(namespace, queue); ok {
		lq = frags.localQueue(l, paths.child("localQueue"))
		if c, ok := view.ClusterQueue(string(l.Spec.ClusterQueue)); ok {
			cq = frags.clusterQueue(c, view, paths.child("clusterQueue"))
		}
	}
	return lq, cq
}

// item is one key of an input object. Keys are the input's fixed field names:
// their terms are made once and shared, as OPA's own interned terms are (a
// term is never modified once built), which saves a hundred allocations per
// request.
func item(key string, v *ast.Term) [2]*ast.Term { return [2]*ast.Term{keyTerm(key), v} }

// keyTerms holds the terms of the names keyTerm is given, for the life of the
// process: meant for the names written in this package, never a key a
// requester wrote (a label's, a resource's). It keeps at most maxKeyTerms,
// so that a caller that hands it one anyway costs allocations, not memory
// for good.
var (
	keyTerms     sync.Map // string → *ast.Term
	keyTermCount atomic.Int64
)

// maxKeyTerms is far above the input's own vocabulary (about 70 names).
const maxKeyTerms = 1024

func keyTerm(key string) *ast.Term {
	if t, ok := keyTerms.Load(key); ok {
		return t.(*ast.Term)
	}
	t := ast.StringTerm(key)
	if keyTermCount.Load() >= maxKeyTerms {
		return t
	}
	kept, loaded := keyTerms.LoadOrStore(key, t)
	if !loaded {
		keyTermCount.Add(1)
	}
	return kept.(*ast.Term)
}

// boolTerm and nullTerm are shared like the keys.
var (
	trueTerm, falseTerm = ast.BooleanTerm(true), ast.BooleanTerm(false)
	nullTerm            = ast.NullTerm()
)

func boolTerm(b bool) *ast.Term {
	if b {
		return trueTerm
	}
	return falseTerm
}

// intTerm is a count; small ones are OPA's interned terms.
func intTerm[T ~int32 | ~int64 | ~int](v T) *ast.Term { return ast.InternedTerm(int(v)) }

// objectValue converts the read parts of an unstructured object. Its content is
// map[string]any decoded from JSON, which OPA converts without reflection.
// managedFields, when not nil, are the object's metadata.managedFields the
// webhook left undecoded: decoded here only when a policy reads them.
func objectValue(u *unstructured.Unstructured, managedFields []byte, p *InputPaths) (ast.Value, error) {
	if u == nil || u.Object == nil {
		return ast.NullValue, nil
	}
	obj := u.Object
	parent, key := admission.ManagedFieldsPath[0], admission.ManagedFieldsPath[1] // metadata, managedFields
	if managedFields != nil && p.reads(parent) && p.child(parent).reads(key) {
		v, ok := jsonmap.Value(managedFields)
		if !ok {
			return nil, errors.New("metadata.managedFields do not decode")
		}
		// Copies of the two maps on the way: the request's object is shared.
		obj = maps.Clone(obj)
		meta := map[string]any{key: v}
		if m, ok := obj[parent].(map[string]any); ok {
			meta = maps.Clone(m)
			meta[key] = v
		}
		obj[parent] = meta
	}
	return projectValue(obj, p)
}

func requestTerm(req *admission.Request, trusted bool, p *InputPaths) *ast.Term {
	f := fields{paths: p}
	f.set("trustedController", func() *ast.Term { return boolTerm(trusted) })
	f.set("uid", func() *ast.Term { return str(string(req.UID)) })
	f.set("operation", func() *ast.Term { return str(string(req.Operation)) })
	f.set("kind", func() *ast.Term { return gvkTerm(req.Kind) })
	f.set("namespace", func() *ast.Term { return str(req.Namespace) })
	f.set("name", func() *ast.Term { return str(req.Name) })
	f.add("userInfo", func(p *InputPaths) *ast.Term { return userInfoTerm(req.UserInfo, p) })
	f.set("dryRun", func() *ast.Term { return boolTerm(req.DryRun) })
	return f.term()
}

// userInfoTerm is built with only the keys read, like the summary: a user's
// extra is a map no shipped policy reads.
func userInfoTerm(u authenticationv1.UserInfo, p *InputPaths) *ast.Term {
	f := fields{paths: p}
	f.set("username", func() *ast.Term { return str(u.Username) })
	f.set("uid", func() *ast.Term { return str(u.UID) })
	f.set("groups", func() *ast.Term { return stringsTerm(u.Groups) })
	f.set("extra", func() *ast.Term {
		extra := ast.NewObject()
		for k, v := range u.Extra {
			extra.Insert(str(k), stringsTerm(v))
		}
		return ast.NewTerm(extra)
	})
	return f.term()
}

func stringsTerm(ss []string) *ast.Term {
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = str(s)
	}
	return ast.ArrayTerm(terms...)
}

func stringMapTerm(m map[string]string) *ast.Term {
	o := ast.NewObjectWithCapacity(len(m))
	for k, v := range m {
		o.Insert(str(k), str(v))
	}
	return ast.NewTerm(o)
}

// summaryTerm renders a Summary. topLevel is always true: the pipeline judges
// parts of another workload as that workload and never sends them to the
// policies. It is in the input so that policies never re-derive it from owner
// references, which only a trusted controller's word makes true.
func summaryTerm(s *workload.Summary, grows bool, obj *unstructured.Unstructured, p *InputPaths) *ast.Term {
	f := fields{paths: p}
	f.set("kind", func() *ast.Term { return gvkTerm(s.Kind) })
	f.set("framework", func() *ast.Term { return str(s.Framework) })
	f.set("queueName", func() *ast.Term { return str(s.QueueName) })
	f.set("priorityClass", func() *ast.Term { return str(s.PriorityClass) })
	f.set("priority", func() *ast.Term {
		return ast.ObjectTerm(item("class", str(s.Priority.Class)), item("source", str(s.Priority.Source)))
	})
	f.set("podSets", func() *ast.Term { return podSetsTerm(s.PodSets) })
	// A workload admitted whole has the same total, unit and least requests:
	// equal lists share one term.
	var lists resourceLists
	f.set("totalRequests", func() *ast.Term { return lists.term(s.TotalRequests) })
	f.set("admissionUnit", func() *ast.Term { return str(string(s.AdmissionUnit)) })
	f.set("unitRequests", func() *ast.Term { return lists.term(s.UnitRequests) })
	f.set("minUnitRequests", func() *ast.Term { return lists.term(s.MinUnitRequests) })
	f.set("topLevel", func() *ast.Term { return trueTerm })
	f.set("grows", func() *ast.Term { return boolTerm(grows) })
	f.set("podSpecPaths", func() *ast.Term { return pathsTermOf(s.Kind, podPaths, s.PodSpecPaths) })
	f.set("jobSpecPaths", func() *ast.Term { return pathsTermOf(s.Kind, jobPaths, s.JobSpecPaths) })
	f.set("claimsUncounted", func() *ast.Term { return str(s.ClaimsUncounted) })
	// The specs are copies of parts of the object, converted as far as the
	// policies read into them. A pod spec inside a Job spec (a Job's, a
	// JobSet's) is taken from the Job spec's term when that was converted
	// whole, rather than converted again.
	var whole []*ast.Term
	f.add("jobSpecs", func(p *InputPaths) *ast.Term {
		specs := specTerms(obj, s.JobSpecPaths, p, nil, nil)
		if p == nil || p.all {
			whole = specs
		}
		return ast.ArrayTerm(specs...)
	})
	f.add("podSpecs", func(p *InputPaths) *ast.Term {
		return ast.ArrayTerm(specTerms(obj, s.PodSpecPaths, p, s.JobSpecPaths, whole)...)
	})
	return f.term()
}

func podSetsTerm(sets []workload.PodSet) *ast.Term {
	podSets := make([]*ast.Term, len(sets))
	for i, ps := range sets {
		minCount := nullTerm
		if ps.MinCount != nil {
			minCount = intTerm(*ps.MinCount)
		}
		podSets[i] = ast.ObjectTerm(
			item("name", str(ps.Name)),
			item("count", intTerm(ps.Count)),
			item("minCount", minCount),
			item("requests", resourceListTerm(ps.Requests)),
		)
	}
	return ast.ArrayTerm(podSets...)
}

// resourceLists remembers the resource lists of one summary rendered so far,
// to render an equal list once.
type resourceLists struct {
	lists []corev1.ResourceList
	terms []*ast.Term
}

func (l *resourceLists) term(rl corev1.ResourceList) *ast.Term {
	for i, seen := range l.lists {
		if equalResourceLists(seen, rl) {
			return l.terms[i]
		}
	}
	t := resourceListTerm(rl)
	l.lists, l.terms = append(l.lists, rl), append(l.terms, t)
	return t
}

// equalResourceLists compares quantities by value, as their terms do.
func equalResourceLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

func resourceListTerm(rl corev1.ResourceList) *ast.Term {
	pairs := getPairs()
	for name, q := range rl {
		pairs.add(str(string(name)), quantityTerm(q))
	}
	return ast.NewTerm(pairs.object())
}

// quantityTerm is a quantity as a number in its base unit: cores for cpu (0.5 for
// 500m), bytes for memory and storage, counts for everything else. The number is
// the quantity's exact decimal value (1.001 for 1001m, not the nearest float), so
// a policy comparing against a limit is never off by a rounding error.
func quantityTerm(q resource.Quantity) *ast.Term {
	if v, ok := q.AsInt64(); ok {
		return ast.InternedTerm(int(v))
	}
	s := q.AsDec().String()
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return ast.NumberTerm(json.Number(s))
}

func optionalQuantityTerm(q *resource.Quantity) *ast.Term {
	if q == nil {
		return nullTerm
	}
	return quantityTerm(*q)
}
