package workload

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/dra"
	"sigs.k8s.io/kueue/pkg/features"
	utilresource "sigs.k8s.io/kueue/pkg/util/resource"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
)

// ClaimTemplates finds the ResourceClaimTemplates a workload's pods name, whose
// devices Kueue charges, and the DeviceClasses that back extended resources
// (spec.extendedResourceName), which Kueue charges as DRA devices. The
// server's informer view and the reviewer's snapshot provide them.
type ClaimTemplates interface {
	ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool)
	DeviceClasses() []resourcev1.DeviceClass
}

// claimed is what Kueue 0.19's workload controller charges a workload's pods
// for their DRA devices, per pod set and per pod: the devices of their
// ResourceClaimTemplates and the extended resources a DeviceClass backs,
// under the names Kueue's deviceClassMappings give them; replaced are the
// extended resources they stand in for. uncounted says why Kueue would not
// count the devices (they are then in no total).
type claimed struct {
	requests  map[kueue.PodSetReference]corev1.ResourceList
	replaced  map[kueue.PodSetReference]sets.Set[corev1.ResourceName]
	uncounted string
}

// claimRequests runs Kueue's own DRA accounting (dra.GetResourceRequestsFor-
// ResourceClaimTemplates, dra.ResolveExtendedResourceQuota) on the pod sets,
// as its workload controller does before it queues the workload. Named
// ResourceClaims Kueue never admits; the shipped policy dra-claims-counted
// refuses them, so they are not reported twice here.
func claimRequests(ctx context.Context, namespace string, podSets []kueue.PodSet, o *Options) (c claimed) {
	// Kueue's code dereferences what it expects the API server to have set.
	defer func() {
		if r := recover(); r != nil {
			c = claimed{uncounted: fmt.Sprintf("internal error counting its DRA devices: %v", r)}
		}
	}()
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: kueue.WorkloadSpec{PodSets: podSets}}
	templates := kueueworkload.HasResourceClaimTemplates(wl)
	if kueueworkload.HasResourceClaim(wl) {
		return claimed{}
	}
	if !features.Enabled(features.KueueDRAIntegration) {
		if templates {
			return claimed{uncounted: "Kueue's KueueDRAIntegration feature gate is off: Kueue charges no device a pod claims"}
		}
		return claimed{}
	}
	extended := features.Enabled(features.KueueDRAIntegrationExtendedResource) && requestsExtended(podSets)
	if !templates && !extended {
		return claimed{}
	}
	if o.Claims == nil {
		if templates {
			return claimed{uncounted: "the ResourceClaimTemplates it names cannot be read here"}
		}
		return claimed{}
	}
	// Kueue looks each extended resource up among the DeviceClasses by
	// spec.extendedResourceName: when no class backs any, none is found and
	// nothing is replaced, so the lookups (about 40 allocations) are skipped.
	if extended && !backsExtended(o.Claims.DeviceClasses()) {
		if !templates {
			return claimed{}
		}
		extended = false
	}
	mapper := dra.NewResourceMapper()
	if err := mapper.PopulateFromConfiguration(o.Kueue.DeviceClassMappings); err != nil {
		return claimed{uncounted: fmt.Sprintf("Kueue's deviceClassMappings cannot be read: %v", err)}
	}
	cl := kueueReader{dra: o.Claims}
	var out claimed
	if templates {
		requests, errs := dra.GetResourceRequestsForResourceClaimTemplates(ctx, cl, dra.NewResourceSliceCache(cl), mapper, wl)
		if len(errs) > 0 {
			return claimed{uncounted: errs.ToAggregate().Error()}
		}
		if class := sourcedClass(namespace, podSets, o); class != "" {
			return claimed{uncounted: fmt.Sprintf("Kueue charges DeviceClass %s by the counters or capacity its "+
				"deviceClassMappings sources name, read from the cluster's ResourceSlices, which kueue-guard does not read", class)}
		}
		out.requests = requests
	}
	if extended {
		byClass, replaced, errs := dra.ResolveExtendedResourceQuota(ctx, cl, mapper, wl)
		if len(errs) > 0 {
			return claimed{uncounted: errs.ToAggregate().Error()}
		}
		out.requests, out.replaced = mergeSum(out.requests, byClass), replaced
	}
	return out
}

// requestsExtended reports whether a container asks for an extended resource,
// which a DeviceClass may back: the rest skip the mapper and the lookups.
func requestsExtended(podSets []kueue.PodSet) bool {
	for i := range podSets {
		spec := &podSets[i].Template.Spec
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for _, c := range cs {
				for name := range c.Resources.Requests {
					if utilresource.IsExtendedResourceName(name) {
						return true
					}
				}
			}
		}
	}
	return false
}

// backsExtended reports whether a DeviceClass backs an extended resource.
func backsExtended(classes []resourcev1.DeviceClass) bool {
	return slices.ContainsFunc(classes, func(dc resourcev1.DeviceClass) bool {
		return ptr.Deref(dc.Spec.ExtendedResourceName, "") != ""
	})
}

// mergeSum adds src's per pod set requests to dst's, as Kueue's workload
// controller merges the two DRA paths (its mergeDRAResources, unexported).
func mergeSum(dst, src map[kueue.PodSetReference]corev1.ResourceList) map[kueue.PodSetReference]corev1.ResourceList {
	for name, res := range src {
		if dst == nil {
			dst = map[kueue.PodSetReference]corev1.ResourceList{}
		}
		dst[name] = utilresource.MergeResourceListKeepSum(dst[name], res)
	}
	return dst
}

// sourcedClass is a device class the pods' templates claim whose mapping has
// sources Kueue charges from ResourceSlices instead of counting devices
// (its partitionable-devices or consumable-capacity gate on): Kueue's count
// above leaves such a class out.
func sourcedClass(namespace string, podSets []kueue.PodSet, o *Options) corev1.ResourceName {
	sourced := map[corev1.ResourceName]bool{}
	for _, m := range o.Kueue.DeviceClassMappings {
		for _, src := range m.Sources {
			if (src.Counter != nil && features.Enabled(features.KueueDRAIntegrationPartitionableDevices)) ||
				(src.Capacity != nil && features.Enabled(features.KueueDRAIntegrationConsumableCapacity)) {
				for _, c := range m.DeviceClassNames {
					sourced[c] = true
				}
			}
		}
	}
	if len(sourced) == 0 {
		return ""
	}
	for _, ps := range podSets {
		for _, prc := range ps.Template.Spec.ResourceClaims {
			if prc.ResourceClaimTemplateName == nil {
				continue
			}
			t, ok := o.Claims.ResourceClaimTemplate(namespace, *prc.ResourceClaimTemplateName)
			if !ok {
				continue
			}
			for _, r := range t.Spec.Spec.Devices.Requests {
				if r.Exactly != nil && sourced[corev1.ResourceName(r.Exactly.DeviceClassName)] {
					return corev1.ResourceName(r.Exactly.DeviceClassName)
				}
			}
		}
	}
	return ""
}
