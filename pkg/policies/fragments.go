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
// manifests, tests' snapshots) are never cached. Terms are immutable once
// built, and OPA only reads its input, so evaluations share them.
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
	term                 *ast.Term
}

func (c *fragmentCache) get(key, uid, rv string, caps []cluster.Capacity, build func() *ast.Term) *ast.Term {
	if c == nil || rv == "" {
		return build()
	}
	if v, ok := c.m.Load(key); ok {
		f := v.(*fragment)
		if f.uid == uid && f.resourceVersion == rv && slices.EqualFunc(f.caps, caps, sameCapacity) {
			return f.term
		}
	}
	f := &fragment{uid: uid, resourceVersion: rv, caps: caps, term: build()}
	if _, loaded := c.m.Swap(key, f); !loaded && c.size.Add(1) > maxFragments {
		c.m.Clear()
		c.size.Store(0)
	}
	return f.term
}

func sameCapacity(a, b cluster.Capacity) bool {
	return a.Flavor == b.Flavor && a.Resource == b.Resource && a.Max.Cmp(b.Max) == 0
}

func (f *fragments) namespace(name string, ns *corev1.Namespace) *ast.Term {
	build := func() *ast.Term { return namespaceTerm(name, ns) }
	if f == nil || ns == nil {
		return build()
	}
	return f.namespaces.get(name, string(ns.UID), ns.ResourceVersion, nil, build)
}

func (f *fragments) localQueue(lq *kueue.LocalQueue) *ast.Term {
	build := func() *ast.Term { return localQueueTerm(lq) }
	if f == nil {
		return build()
	}
	return f.localQueues.get(lq.Namespace+"/"+lq.Name, string(lq.UID), lq.ResourceVersion, nil, build)
}

func (f *fragments) clusterQueue(cq *kueue.ClusterQueue, view cluster.View) *ast.Term {
	caps, _ := view.ClusterQueueCapacity(cq.Name)
	build := func() *ast.Term { return clusterQueueTerm(cq, caps) }
	if f == nil {
		return build()
	}
	return f.clusterQueues.get(cq.Name, string(cq.UID), cq.ResourceVersion, caps, build)
}
