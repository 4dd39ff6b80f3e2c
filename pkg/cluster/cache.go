package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// CachedTypes are the kinds the server's informer cache holds. The manager's RBAC
// (get/list/watch) and the chart's ClusterRole follow this list.
func CachedTypes() []client.Object {
	return []client.Object{&corev1.Namespace{}, &kueue.LocalQueue{}, &kueue.ClusterQueue{}}
}

// CacheOptions configures an informer cache that only serves the cached types and
// never starts an informer lazily: a lookup of anything else fails instead of
// quietly listing from the API server on the request path.
func CacheOptions(scheme *runtime.Scheme) cache.Options {
	return cache.Options{Scheme: scheme, ReaderFailOnMissingInformer: true}
}

// InformerView is the server's View, read from an informer cache.
type InformerView struct {
	reader client.Reader
}

var _ View = (*InformerView)(nil)

// NewInformerView registers informers for CachedTypes on c (so that the cache's
// sync covers them) and returns a View that reads from it.
func NewInformerView(ctx context.Context, c cache.Cache) (*InformerView, error) {
	for _, obj := range CachedTypes() {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("registering informer for %T: %w", obj, err)
		}
	}
	return &InformerView{reader: c}, nil
}

// get reads from the in-memory store. The context is background: the store never
// blocks, and a cancelled request must not turn a hit into a miss.
func (v *InformerView) get(namespace, name string, obj client.Object) bool {
	return v.reader.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj) == nil
}

// Namespace implements View.
func (v *InformerView) Namespace(name string) (*corev1.Namespace, bool) {
	ns := &corev1.Namespace{}
	return ns, v.get("", name, ns)
}

// LocalQueue implements View.
func (v *InformerView) LocalQueue(namespace, name string) (*kueue.LocalQueue, bool) {
	lq := &kueue.LocalQueue{}
	return lq, v.get(namespace, name, lq)
}

// ClusterQueue implements View.
func (v *InformerView) ClusterQueue(name string) (*kueue.ClusterQueue, bool) {
	cq := &kueue.ClusterQueue{}
	return cq, v.get("", name, cq)
}
