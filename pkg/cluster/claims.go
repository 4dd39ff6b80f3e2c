package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The ResourceClaimTemplates whose devices Kueue charges are read from the cache
// (workload.ClaimTemplates). resource.k8s.io/v1 is served by default from
// Kubernetes 1.34; on an older cluster no workload can claim devices through it,
// and none is found.

// watchClaimTemplates registers the ResourceClaimTemplate and DeviceClass
// informers where the API server serves resource.k8s.io/v1.
func watchClaimTemplates(ctx context.Context, c cache.Cache) error {
	for _, obj := range []client.Object{&resourcev1.ResourceClaimTemplate{}, &resourcev1.DeviceClass{}} {
		_, err := c.GetInformer(ctx, obj)
		if meta.IsNoMatchError(err) {
			log.FromContext(ctx).Info("resource.k8s.io/v1 is not served: no DRA object is read")
			return nil
		}
		if err != nil {
			return fmt.Errorf("registering informer for %T: %w", obj, err)
		}
	}
	return nil
}

// ResourceClaimTemplate implements View.
func (v *InformerView) ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool) {
	t := &resourcev1.ResourceClaimTemplate{}
	return t, v.get(namespace, name, t)
}

// DeviceClasses implements View; none while resource.k8s.io/v1 is not served.
func (v *InformerView) DeviceClasses() []resourcev1.DeviceClass {
	list := &resourcev1.DeviceClassList{}
	if err := v.cache.List(context.Background(), list); err != nil {
		return nil
	}
	return list.Items
}

// DeviceClasses implements View, in name order.
func (s *Snapshot) DeviceClasses() []resourcev1.DeviceClass {
	out := make([]resourcev1.DeviceClass, 0, len(s.deviceClasses))
	for _, name := range slices.Sorted(maps.Keys(s.deviceClasses)) {
		out = append(out, *s.deviceClasses[name])
	}
	return out
}

// ResourceClaimTemplate implements View.
func (s *Snapshot) ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool) {
	t, ok := s.claimTemplates[types.NamespacedName{Namespace: namespace, Name: name}]
	return t, ok
}
