package cluster

import (
	"context"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	ctrlconstants "sigs.k8s.io/kueue/pkg/controller/constants"
)

// localQueueCRD is the CRD that serves Kueue's LocalQueues.
const localQueueCRD = "localqueues." + "kueue.x-k8s.io"

// defaultQueues remembers the namespaces whose workloads Kueue's LocalQueue
// named "default" queues, across a time Kueue's API is not served (Kueue
// uninstalled or being reinstalled, its CRDs and every LocalQueue with them
// gone): those namespaces are still owed a queue then, and a workload created
// there must wait for Kueue rather than run. A default LocalQueue an admin
// deletes while its CRD stays is forgotten; one deleted with its CRD (the
// CRD already terminating in the cache) is not.
type defaultQueues struct {
	mu sync.RWMutex
	ns map[string]bool
}

// has reports whether the namespace had Kueue's default LocalQueue when it
// was last seen.
func (d *defaultQueues) has(namespace string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.ns[namespace]
}

// reset forgets everything: a new informer lists every LocalQueue again.
func (d *defaultQueues) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ns = nil
}

func (d *defaultQueues) set(namespace string, present bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ns == nil {
		d.ns = map[string]bool{}
	}
	if present {
		d.ns[namespace] = true
	} else {
		delete(d.ns, namespace)
	}
}

// handler follows the LocalQueue informer. crdLeaving reports whether
// Kueue's LocalQueue API is going away, so a deletion is not a decision.
func (d *defaultQueues) handler(crdLeaving func() bool) toolscache.ResourceEventHandler {
	isDefault := func(obj any) (string, bool) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return "", false
		}
		return o.GetNamespace(), o.GetName() == string(ctrlconstants.DefaultLocalQueueName)
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ns, ok := isDefault(obj); ok {
				d.set(ns, true)
			}
		},
		DeleteFunc: func(obj any) {
			if ns, ok := isDefault(obj); ok && !crdLeaving() {
				d.set(ns, false)
			}
		},
	}
}

// crdLeaving reports whether the LocalQueue CRD is gone, not serving, or
// being deleted. The CRD's informer may not have seen its deletion yet when
// the LocalQueues it takes along are deleted (two watches, no order between
// them), so a cache that says "staying" is confirmed by a read from the API
// server; a read that fails counts as leaving, which only keeps a memory that
// matters while Kueue's API is away.
func (v *InformerView) crdLeaving() bool { return crdLeaving(v.cache, v.live) }

func crdLeaving(cached, live client.Reader) bool {
	if leaving(context.Background(), cached) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return leaving(ctx, live)
}

func leaving(ctx context.Context, r client.Reader) bool {
	crd := newUnstructured(crdGVK)
	if err := r.Get(ctx, client.ObjectKey{Name: localQueueCRD}, crd); err != nil {
		return true
	}
	return crd.GetDeletionTimestamp() != nil || !crdServes(crd, kueue.SchemeGroupVersion.WithKind("LocalQueue"))
}

// KueueDefaultQueueRemembered implements View.
func (v *InformerView) KueueDefaultQueueRemembered(namespace string) bool {
	return !v.QueuesKnown() && v.defaults.has(namespace)
}
