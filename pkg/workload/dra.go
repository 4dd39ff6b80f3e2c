package workload

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
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
	// Only an extended resource a DeviceClass backs is charged as devices:
	// for the others Kueue's lookups find no class and replace nothing.
	var classes []resourcev1.DeviceClass
	extended := false
	if features.Enabled(features.KueueDRAIntegrationExtendedResource) && o.Claims != nil {
		classes, extended = requestsBacked(podSets, o.Claims)
	}
	if !templates && !extended {
		return claimed{}
	}
	if o.Claims == nil {
		return claimed{uncounted: "the ResourceClaimTemplates it names cannot be read here"}
	}
	mapper := dra.NewResourceMapper()
	if err := mapper.PopulateFromConfiguration(o.Kueue.DeviceClassMappings); err != nil {
		return claimed{uncounted: fmt.Sprintf("Kueue's deviceClassMappings cannot be read: %v", err)}
	}
	cl := kueueReader{dra: o.Claims}
	if extended {
		// Kueue lists the classes again for every resource: the list made above serves them.
		cl.dra = listedClasses{o.Claims, classes}
	}
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

// requestsBacked reports whether a container requests an extended resource a
// DeviceClass backs, the only ones Kueue's ResolveExtendedResourceQuota
// charges as devices, with the classes it listed (only once a container
// requests an extended resource at all: most workloads never list them).
func requestsBacked(podSets []kueue.PodSet, claims ClaimTemplates) (classes []resourcev1.DeviceClass, backed bool) {
	listed := false
	for i := range podSets {
		spec := &podSets[i].Template.Spec
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for _, c := range cs {
				for name, q := range c.Resources.Requests {
					// Kueue skips the same requests (dra.extendedResourceRequests).
					if q.Sign() <= 0 || !utilresource.IsExtendedResourceName(name) {
						continue
					}
					if !listed {
						classes, listed = claims.DeviceClasses(), true
					}
					if slices.ContainsFunc(classes, func(dc resourcev1.DeviceClass) bool { return backs(&dc, name) }) {
						return classes, true
					}
				}
			}
		}
	}
	return classes, false
}

// listedClasses answers Kueue's DeviceClass lookups from one list.
type listedClasses struct {
	ClaimTemplates
	classes []resourcev1.DeviceClass
}

func (l listedClasses) DeviceClasses() []resourcev1.DeviceClass { return l.classes }

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
