package workload

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
)

// kueueReader is the client Kueue's own accounting code reads the cluster
// through (workload.AdjustResources, the dra package), over what the caller's
// view holds: RuntimeClasses and a namespace's LimitRanges (res), claim
// templates and DeviceClasses (dra). It answers those reads and refuses any
// other; the embedded client is never set, so a method that code does not
// call fails loudly (a panic its callers contain) rather than reaching an API
// server.
type kueueReader struct {
	client.Client
	res Resources
	dra ClaimTemplates
}

// backs reports whether DeviceClass dc backs extended resource name: what
// Kueue's field selector spec.extendedResourceName matches.
func backs(dc *resourcev1.DeviceClass, name corev1.ResourceName) bool {
	return ptr.Deref(dc.Spec.ExtendedResourceName, "") == string(name)
}

// errNoSlices is what Kueue's DRA code meets when it would list the cluster's
// ResourceSlices: for a claim whose devices are chosen by CEL selectors, which
// Kueue checks against the devices there are. kueue-guard does not read them
// (one per node and driver, large), so such a claim is not counted here.
var errNoSlices = errors.New("kueue-guard does not read ResourceSlices, which Kueue checks a claim's CEL selectors against")

// Get implements client.Reader for RuntimeClasses and ResourceClaimTemplates.
func (r kueueReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch into := obj.(type) {
	case *nodev1.RuntimeClass:
		found, ok := r.res.RuntimeClass(key.Name)
		if !ok {
			return fmt.Errorf("RuntimeClass %q not found", key.Name)
		}
		found.DeepCopyInto(into)
	case *resourcev1.ResourceClaimTemplate:
		t, ok := r.dra.ResourceClaimTemplate(key.Namespace, key.Name)
		if !ok {
			return fmt.Errorf("ResourceClaimTemplate %s not found: create it before the workload that names it", key)
		}
		t.DeepCopyInto(into)
	default:
		return fmt.Errorf("kueue-guard does not read %T", obj)
	}
	return nil
}

// List implements client.Reader for a namespace's LimitRanges (those with a
// container or pod limit, by Kueue's own index function when a field selector
// asks for them) and the DeviceClasses backing an extended resource (a field
// selector on spec.extendedResourceName).
func (r kueueReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	switch into := list.(type) {
	case *corev1.LimitRangeList:
		wantContainer := o.FieldSelector != nil && !o.FieldSelector.Empty()
		into.Items = nil
		for _, lr := range r.res.LimitRanges(o.Namespace) {
			if wantContainer && len(indexer.IndexLimitRangeHasContainerOrPodType(&lr)) == 0 {
				continue
			}
			into.Items = append(into.Items, *lr.DeepCopy())
		}
	case *resourcev1.DeviceClassList:
		want, byName := "", o.FieldSelector != nil
		if byName {
			if want, byName = o.FieldSelector.RequiresExactMatch("spec.extendedResourceName"); !byName {
				return fmt.Errorf("kueue-guard cannot list DeviceClasses by %s", o.FieldSelector)
			}
		}
		into.Items = nil
		for _, dc := range r.dra.DeviceClasses() {
			if !byName || backs(&dc, corev1.ResourceName(want)) {
				into.Items = append(into.Items, dc)
			}
		}
	case *resourcev1.ResourceSliceList:
		return errNoSlices
	default:
		return fmt.Errorf("kueue-guard does not list %T", list)
	}
	return nil
}
