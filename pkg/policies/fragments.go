package policies

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
)

// maxFragments bounds each kind's cache of input fragments; when it is reached
// the kind's cache starts over, so objects deleted from the cluster are dropped
// too. Only objects requests name are cached: their namespaces and queues.
const maxFragments = 4096

// fragments caches the parts of the policy input that come from the cluster —
// input.namespace, input.localQueue, input.clusterQueue — as OPA terms, per
// version (UID and resourceVersion) of the object they are built from, so that
// a request builds only its own parts. A ClusterQueue's term also depends on its
// capacity, which changes with its cohort tree: it is rebuilt when the capacity
// the view computes differs. Objects without a resourceVersion (a review's
// manifests, tests' snapshots) are never cached. Each term is projected to
// what the serving set reads of it (paths), and kept for those paths: a
// decision is then reused across changes no policy reads (a ClusterQueue's
// workload counts change with every workload it admits). Terms are immutable
// once built, and OPA only reads its input, so evaluations share them.
type fragments struct {
	namespaces, localQueues, clusterQueues fragmentCache
}

type fragmentCache struct {
	m    sync.Map // name → *fragment
	size atomic.Int64
}

type fragment struct {
	uid, resourceVersion string
	caps                 []cluster.Capacity
	paths                *InputPaths
	term                 *ast.Term
}

// get is the term build makes, projected to paths (nil: whole).
func (c *fragmentCache) get(key, uid, rv string, caps []cluster.Capacity, paths *InputPaths, build func() *ast.Term) *ast.Term {
	if c == nil || rv == "" {
		return projectTerm(build(), paths)
	}
	if v, ok := c.m.Load(key); ok {
		f := v.(*fragment)
		if f.uid == uid && f.resourceVersion == rv && f.paths == paths && slices.EqualFunc(f.caps, caps, sameCapacity) {
			return f.term
		}
	}
	f := &fragment{uid: uid, resourceVersion: rv, caps: caps, paths: paths, term: projectTerm(build(), paths)}
	if _, loaded := c.m.Swap(key, f); !loaded && c.size.Add(1) > maxFragments {
		c.m.Clear()
		c.size.Store(0)
	}
	return f.term
}

func sameCapacity(a, b cluster.Capacity) bool {
	return a.Flavor == b.Flavor && a.Resource == b.Resource && a.Max.Cmp(b.Max) == 0
}

// Without fragments (nil) each part is built and projected per request, as it
// is for an object without a version (fragmentCache.get).

func (f *fragments) namespace(name string, ns *corev1.Namespace, paths *InputPaths) *ast.Term {
	var c *fragmentCache
	var uid, rv string
	if f != nil {
		c = &f.namespaces
	}
	if ns != nil {
		uid, rv = string(ns.UID), ns.ResourceVersion
	}
	return c.get(name, uid, rv, nil, paths, func() *ast.Term { return namespaceTerm(name, ns) })
}

func (f *fragments) localQueue(lq *kueue.LocalQueue, paths *InputPaths) *ast.Term {
	var c *fragmentCache
	if f != nil {
		c = &f.localQueues
	}
	build := func() *ast.Term { return localQueueTerm(lq) }
	return c.get(lq.Namespace+"/"+lq.Name, string(lq.UID), lq.ResourceVersion, nil, paths, build)
}

func (f *fragments) clusterQueue(cq *kueue.ClusterQueue, view cluster.View, paths *InputPaths) *ast.Term {
	var c *fragmentCache
	if f != nil {
		c = &f.clusterQueues
	}
	caps, _ := view.ClusterQueueCapacity(cq.Name)
	build := func() *ast.Term { return clusterQueueTerm(cq, caps) }
	return c.get(cq.Name, string(cq.UID), cq.ResourceVersion, caps, paths, build)
}
