package workload

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/dra"
	"sigs.k8s.io/kueue/pkg/features"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
)

// ClaimTemplates finds the ResourceClaimTemplates a workload's pods name, whose
// devices Kueue charges. The server's informer view and the reviewer's snapshot
// provide it.
type ClaimTemplates interface {
	ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool)
}

// errNoSlices is what Kueue's DRA code meets when it would list the cluster's
// ResourceSlices: for a claim whose devices are chosen by CEL selectors, which
// Kueue checks against the devices there are. kueue-guard does not read them
// (one per node and driver, large), so such a claim is not counted here.
var errNoSlices = errors.New("kueue-guard does not read ResourceSlices, which Kueue checks a claim's CEL selectors against")

// claimRequests is what Kueue 0.19's workload controller adds to each pod set's
// per-pod requests for the devices its ResourceClaimTemplates claim
// (dra.GetResourceRequestsForResourceClaimTemplates, run here on the same pod
// sets), or why Kueue would not count them: then uncounted says so and the
// devices are in no total. Named ResourceClaims Kueue never admits; the shipped
// policy dra-claims-counted refuses them, so they are not reported twice here.
func claimRequests(ctx context.Context, namespace string, podSets []kueue.PodSet, o *Options) (
	requests map[kueue.PodSetReference]corev1.ResourceList, uncounted string) {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: kueue.WorkloadSpec{PodSets: podSets}}
	if !kueueworkload.HasResourceClaimTemplates(wl) || kueueworkload.HasResourceClaim(wl) {
		return nil, ""
	}
	if !features.Enabled(features.KueueDRAIntegration) {
		return nil, "Kueue's KueueDRAIntegration feature gate is off: Kueue charges no device a pod claims"
	}
	if o.Claims == nil {
		return nil, "the ResourceClaimTemplates it names cannot be read here"
	}
	mapper := dra.NewResourceMapper()
	if err := mapper.PopulateFromConfiguration(o.Kueue.DeviceClassMappings); err != nil {
		return nil, fmt.Sprintf("Kueue's deviceClassMappings cannot be read: %v", err)
	}
	cl := claimsClient{templates: o.Claims}
	requests, errs := dra.GetResourceRequestsForResourceClaimTemplates(ctx, cl, dra.NewResourceSliceCache(cl), mapper, wl)
	if len(errs) > 0 {
		return nil, errs.ToAggregate().Error()
	}
	if class := sourcedClass(namespace, podSets, o); class != "" {
		return nil, fmt.Sprintf("Kueue charges DeviceClass %s by the counters or capacity its deviceClassMappings sources "+
			"name, read from the cluster's ResourceSlices, which kueue-guard does not read", class)
	}
	return requests, ""
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

// claimsClient is the client.Client Kueue's DRA code reads through: it gets
// ResourceClaimTemplates from ClaimTemplates and reads nothing else. The
// embedded nil Client is never called (that code only gets and lists); a call
// would panic, and computePodSets' caller contains it as an internal error.
type claimsClient struct {
	client.Client
	templates ClaimTemplates
}

func (c claimsClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	into, ok := obj.(*resourcev1.ResourceClaimTemplate)
	if !ok {
		return fmt.Errorf("kueue-guard does not read %T", obj)
	}
	t, found := c.templates.ResourceClaimTemplate(key.Namespace, key.Name)
	if !found {
		return fmt.Errorf("ResourceClaimTemplate %s not found: create it before the workload that names it", key)
	}
	t.DeepCopyInto(into)
	return nil
}

func (c claimsClient) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errNoSlices
}
