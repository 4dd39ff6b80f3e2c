package workload

import (
	"context"
	"errors"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errNoSlices is what Kueue's DRA code meets when it would list the cluster's
// ResourceSlices: for a claim whose devices are chosen by CEL selectors, which
// Kueue checks against the devices there are. kueue-guard does not read them
// (one per node and driver, large), so such a claim is not counted here.
var errNoSlices = errors.New("kueue-guard does not read ResourceSlices, which Kueue checks a claim's CEL selectors against")

// claimsClient is the client.Client Kueue's DRA code reads through: it gets
// ResourceClaimTemplates and lists DeviceClasses from ClaimTemplates, and
// reads nothing else. The embedded nil Client is never called (that code only
// gets and lists); a call would panic, which claimRequests contains.
type claimsClient struct {
	client.Client
	dra ClaimTemplates
}

func (c claimsClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	into, ok := obj.(*resourcev1.ResourceClaimTemplate)
	if !ok {
		return fmt.Errorf("kueue-guard does not read %T", obj)
	}
	t, found := c.dra.ResourceClaimTemplate(key.Namespace, key.Name)
	if !found {
		return fmt.Errorf("ResourceClaimTemplate %s not found: create it before the workload that names it", key)
	}
	t.DeepCopyInto(into)
	return nil
}

// List serves the DeviceClasses Kueue looks up by the extended resource
// they back (a field selector on spec.extendedResourceName); any other list
// is of ResourceSlices.
func (c claimsClient) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	into, ok := list.(*resourcev1.DeviceClassList)
	if !ok {
		return errNoSlices
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	want, byName := "", lo.FieldSelector != nil
	if byName {
		if want, byName = lo.FieldSelector.RequiresExactMatch("spec.extendedResourceName"); !byName {
			return fmt.Errorf("kueue-guard cannot list DeviceClasses by %s", lo.FieldSelector)
		}
	}
	into.Items = nil
	for _, dc := range c.dra.DeviceClasses() {
		if !byName || ptr.Deref(dc.Spec.ExtendedResourceName, "") == want {
			into.Items = append(into.Items, dc)
		}
	}
	return nil
}
