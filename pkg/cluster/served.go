package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// crdGVK is read as unstructured, cut down to what tells whether a kind is
// served: its group, kind, served versions and Established condition.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// stripCRD is the CRD informer's transform: the schemas (most of a CRD's size)
// are dropped before the object is stored. What it keeps has the CRD's own
// shape, so that applying it again (informers may) changes nothing.
func stripCRD(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	kept := make([]any, 0, len(versions))
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok {
			k := map[string]any{"name": m["name"], "served": m["served"]}
			// Where a scale's replicas go (ScaleReplicasPath).
			if path, found, _ := unstructured.NestedString(m, "subresources", "scale", "specReplicasPath"); found {
				k["subresources"] = map[string]any{"scale": map[string]any{"specReplicasPath": path}}
			}
			kept = append(kept, k)
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var established []any
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" {
			established = append(established, map[string]any{"type": m["type"], "status": m["status"]})
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": keptMetadata(u),
		"spec":   map[string]any{"group": group, "names": map[string]any{"kind": kind}, "versions": kept},
		"status": map[string]any{"conditions": established},
	}}, nil
}

// crdServes reports whether a CRD serves gvk: its group and kind, the version
// served, and the CRD established.
func crdServes(u *unstructured.Unstructured, gvk schema.GroupVersionKind) bool {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	if group != gvk.Group || kind != gvk.Kind {
		return false
	}
	established := false
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false
	}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["name"] == gvk.Version && m["served"] == true {
			return true
		}
	}
	return false
}

// optionalKind is a kind served by a CRD that may be missing when the server
// starts (Kueue installed later, or reinstalled; a managed Kueue serving
// another version; LeaderWorkerSet or Kubeflow Trainer not installed). Its
// informer runs only while its CRD serves the version this build reads.
type optionalKind struct {
	gvk schema.GroupVersionKind
	new func() client.Object
	// onStart, when set, runs once the informer exists (event handlers).
	onStart func(toolscache.SharedIndexInformer) error
	// informer is set while the informer runs; the kind is known once it has
	// synced.
	informer atomic.Pointer[informerRef]
	mu       sync.Mutex
	// want is what the CRDs last said; a start in progress checks it again.
	want     bool
	starting bool
}

type informerRef struct{ cache.Informer }

// store is k's running informer, nil while it has none.
func (k *optionalKind) store() toolscache.SharedIndexInformer {
	if k == nil {
		return nil
	}
	ref := k.informer.Load()
	if ref == nil {
		return nil
	}
	sii, _ := ref.Informer.(toolscache.SharedIndexInformer)
	return sii
}

// known reports whether the kind's objects can be read: its informer runs and
// has synced.
func (k *optionalKind) known() bool {
	ref := k.informer.Load()
	return ref != nil && ref.HasSynced()
}

// optionalKinds tracks the optional kinds of one view.
type optionalKinds struct {
	cache  cache.Cache
	logger logr.Logger
	byGVK  map[schema.GroupVersionKind]*optionalKind
	// changed runs after an informer started or stopped.
	changed func()
}

// register tries to register k's informer before the cache starts, so that the
// cache's sync covers it. A kind that is not served is not an error: the CRD
// watch starts its informer when its CRD appears.
func (o *optionalKinds) register(ctx context.Context, k *optionalKind) error {
	o.byGVK[k.gvk] = k
	inf, err := o.cache.GetInformer(ctx, k.new(), cache.BlockUntilSynced(false))
	if meta.IsNoMatchError(err) {
		o.logger.Info("kind not served yet; watched once its CRD serves it", "kind", k.gvk.String())
		return nil
	}
	if err != nil {
		return fmt.Errorf("registering informer for %s: %w", k.gvk, err)
	}
	k.want = true
	return o.started(k, inf)
}

func (o *optionalKinds) started(k *optionalKind, inf cache.Informer) error {
	if k.onStart != nil {
		sii, ok := inf.(toolscache.SharedIndexInformer)
		if !ok {
			return fmt.Errorf("informer for %s is a %T", k.gvk, inf)
		}
		if err := k.onStart(sii); err != nil {
			return err
		}
	}
	k.informer.Store(&informerRef{inf})
	if o.changed != nil {
		o.changed()
	}
	return nil
}

// crdChanged follows one CRD event: each optional kind the CRD serves (or
// stopped serving) has its informer started or removed. served is false for a
// deleted CRD.
func (o *optionalKinds) crdChanged(ctx context.Context, crd *unstructured.Unstructured, deleted bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	for _, k := range o.byGVK {
		if group == k.gvk.Group && kind == k.gvk.Kind {
			o.want(ctx, k, !deleted && crdServes(crd, k.gvk))
		}
	}
}

// want starts or stops k's informer to follow its CRD.
func (o *optionalKinds) want(ctx context.Context, k *optionalKind, served bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.want = served
	switch {
	case served && k.informer.Load() == nil && !k.starting:
		k.starting = true
		go o.start(ctx, k)
	case !served && k.informer.Load() != nil:
		if err := o.cache.RemoveInformer(ctx, k.new()); err != nil {
			o.logger.Error(err, "stopping the informer of a kind no longer served", "kind", k.gvk.String())
		}
		k.informer.Store(nil)
		o.logger.Info("kind no longer served: its objects are unknown until it is again", "kind", k.gvk.String())
		if o.changed != nil {
			o.changed()
		}
	}
}

// start creates k's informer once the API server's discovery serves the kind
// (it may lag the CRD's Established condition), retrying until the CRD stops
// serving it or the server stops.
func (o *optionalKinds) start(ctx context.Context, k *optionalKind) {
	var inf cache.Informer
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		k.mu.Lock()
		want := k.want
		k.mu.Unlock()
		if !want {
			return true, nil
		}
		var err error
		inf, err = o.cache.GetInformer(ctx, k.new(), cache.BlockUntilSynced(false))
		if err != nil {
			o.logger.V(1).Info("kind not served by discovery yet", "kind", k.gvk.String(), "error", err.Error())
			return false, nil
		}
		return true, nil
	})
	k.mu.Lock()
	defer k.mu.Unlock()
	k.starting = false
	if inf == nil {
		return
	}
	if !k.want {
		_ = o.cache.RemoveInformer(ctx, k.new())
		return
	}
	if err := o.started(k, inf); err != nil {
		o.logger.Error(err, "starting the informer of a newly served kind", "kind", k.gvk.String())
		return
	}
	o.logger.Info("kind now served: watching it", "kind", k.gvk.String())
}

// scaleReplicasPath reads where a CRD's scale subresource puts the replicas
// at gvk's version: its specReplicasPath (".spec.x.replicas"), as field names.
func scaleReplicasPath(crd *unstructured.Unstructured, gvk schema.GroupVersionKind) ([]string, bool) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok || m["name"] != gvk.Version {
			continue
		}
		path, found, _ := unstructured.NestedString(m, "subresources", "scale", "specReplicasPath")
		if !found || !strings.HasPrefix(path, ".") {
			return nil, false
		}
		fields := strings.Split(path[1:], ".")
		if slices.Contains(fields, "") {
			return nil, false
		}
		return fields, true
	}
	return nil, false
}

// ScaleReplicasPath implements View: the built-in kinds' spec.replicas, or
// what the kind's CRD declares, as the cache last saw it.
func (v *InformerView) ScaleReplicasPath(in *integrations.Integration) ([]string, bool) {
	if in.GVK.Group == "apps" {
		return in.ScaleReplicas, true
	}
	crd := newUnstructured(crdGVK)
	if !v.get("", in.Resource+"."+in.GVK.Group, crd) {
		return nil, false
	}
	return scaleReplicasPath(crd, in.GVK)
}

// ScaleReplicasPath implements View: a snapshot holds no CRDs; the catalog
// says where the CRD version Kueue integrates puts the replicas.
func (s *Snapshot) ScaleReplicasPath(in *integrations.Integration) ([]string, bool) {
	return in.ScaleReplicas, len(in.ScaleReplicas) > 0
}
