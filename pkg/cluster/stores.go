package cluster

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// indexInformer is the cache's informer of obj's kind, whose store stored
// reads.
func indexInformer(ctx context.Context, c cache.Cache, obj client.Object) (toolscache.SharedIndexInformer, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("registering informer for %T: %w", obj, err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer for %T is a %T", obj, inf)
	}
	return sii, nil
}

// stored is the object the informer's store holds under namespace and name:
// the store's own, not a copy (the View's objects are read-only). Every
// validating request reads its namespace and queues several times: through
// cache.Get, which copies, that was 2 % of kueue-guard's CPU on make bench's
// Job CREATE stream (pprof), and is now too little to show. Like cache.Get,
// it reads what the store holds while the informer syncs (callers tell a
// missing queue from an unknown one by QueuesKnown), and a miss is nil, as
// in a Snapshot.
func stored[T client.Object](inf toolscache.SharedIndexInformer, namespace, name string) (T, bool) {
	var none T
	if inf == nil {
		return none, false
	}
	obj, ok, err := inf.GetIndexer().GetByKey(toolscache.NewObjectName(namespace, name).String())
	if err != nil || !ok {
		return none, false
	}
	t, ok := obj.(T)
	return t, ok
}
