package cluster

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The ResourceClaimTemplates whose devices Kueue charges are read from the cache
// (workload.ClaimTemplates). resource.k8s.io/v1 is served by default from
// Kubernetes 1.34; on an older cluster no workload can claim devices through it,
// and none is found.

// watchClaimTemplates registers the ResourceClaimTemplate informer where the
// API server serves resource.k8s.io/v1.
func watchClaimTemplates(ctx context.Context, c cache.Cache) error {
	_, err := c.GetInformer(ctx, &resourcev1.ResourceClaimTemplate{})
	if meta.IsNoMatchError(err) {
		log.FromContext(ctx).Info("resource.k8s.io/v1 is not served: no ResourceClaimTemplate is read")
		return nil
	}
	if err != nil {
		return fmt.Errorf("registering informer for ResourceClaimTemplates: %w", err)
	}
	return nil
}

// ResourceClaimTemplate implements View.
func (v *InformerView) ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool) {
	t := &resourcev1.ResourceClaimTemplate{}
	return t, v.get(namespace, name, t)
}

// ResourceClaimTemplate implements View.
func (s *Snapshot) ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool) {
	t, ok := s.claimTemplates[types.NamespacedName{Namespace: namespace, Name: name}]
	return t, ok
}
