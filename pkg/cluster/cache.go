package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// deploymentGVK is read as unstructured so the controller fingerprint works on the
// same form as admission requests, and so a transform can keep only what it needs.
var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

func newDeployment() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(deploymentGVK)
	return u
}

// CachedTypes are the kinds the server's informer cache holds. The chart's
// ClusterRole (get/list/watch) follows this list. ConfigMaps are read only in
// Kueue's namespace.
func CachedTypes() []client.Object {
	objs := []client.Object{&corev1.Namespace{}, &kueue.LocalQueue{}, &kueue.ClusterQueue{}, &corev1.ConfigMap{}, newDeployment(),
		&corev1.LimitRange{}, &nodev1.RuntimeClass{}, &kueue.ResourceFlavor{}, &kueue.Cohort{},
		// Not read by the pipeline: the server's webhook order check watches them.
		&admissionregistrationv1.MutatingWebhookConfiguration{}}
	for _, in := range integrations.ScaleJudged() {
		if in.GVK != deploymentGVK {
			objs = append(objs, newUnstructured(in.GVK))
		}
	}
	// Kueue builds a TrainJob's pod sets from the runtime it names.
	for _, gvk := range workload.TrainingRuntimeGVKs {
		objs = append(objs, newUnstructured(gvk))
	}
	return objs
}

func newUnstructured(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// queued reports whether a workload of a scaled kind is queued: its effective
// queue label (its own, else its pod template's) is set, as Kueue reads it.
func queued(u *unstructured.Unstructured) bool {
	in, ok := integrations.Lookup(u.GroupVersionKind().GroupKind())
	return ok && workload.EffectiveLabel(u, in, integrations.QueueNameLabel) != ""
}

// keepQueued is the cache transform of a scaled kind: a queued workload is kept
// whole, because a scale of it is judged as an update of the whole workload;
// any other is cut down by strip, so a cluster's StatefulSets and Deployments
// cost memory only when Kueue manages them. (A label selector cannot do this:
// the queue label may be in the pod template only.)
func keepQueued(strip toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok && queued(u) {
			return u, nil
		}
		return strip(obj)
	}
}

// CacheOptions configures an informer cache that only serves the cached types and
// never starts an informer lazily: a lookup of anything else fails instead of
// quietly listing from the API server on the request path. ConfigMaps are cached
// in Kueue's namespace only; Deployments that are not queued are stripped to
// what the Kueue controller fingerprint reads, and other unqueued workloads of
// scaled kinds to their metadata.
func CacheOptions(scheme *runtime.Scheme, kueueNamespace string) cache.Options {
	byObject := map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{kueueNamespace: {}}},
	}
	deployment := cache.ByObject{Transform: stripDeployment}
	for _, in := range integrations.ScaleJudged() {
		if in.GVK == deploymentGVK {
			deployment.Transform = keepQueued(stripDeployment)
			continue
		}
		byObject[newUnstructured(in.GVK)] = cache.ByObject{Transform: keepQueued(stripToMetadata)}
	}
	byObject[newDeployment()] = deployment
	return cache.Options{Scheme: scheme, ReaderFailOnMissingInformer: true, ByObject: byObject}
}

// stripToMetadata keeps an object's identity and labels.
func stripToMetadata(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": keptMetadata(u),
	}}, nil
}

// keptMetadata is the part of an object's metadata a stripped copy keeps.
func keptMetadata(u *unstructured.Unstructured) map[string]any {
	meta := map[string]any{}
	m, _ := u.Object["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace", "uid", "labels", "ownerReferences", "resourceVersion", "creationTimestamp"} {
		if v, ok := m[k]; ok {
			meta[k] = v
		}
	}
	return meta
}

// stripDeployment keeps a Deployment's identity, labels, owners and containers'
// images, commands and arguments; everything else is dropped before caching.
func stripDeployment(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	md := keptMetadata(u)
	spec := map[string]any{}
	if tmpl, found, _ := unstructured.NestedMap(u.Object, "spec", "template"); found {
		podSpec := map[string]any{}
		for _, key := range []string{"containers", "initContainers"} {
			list, _, _ := unstructured.NestedSlice(tmpl, "spec", key)
			var kept []any
			for _, c := range list {
				cm, ok := c.(map[string]any)
				if !ok {
					continue
				}
				slim := map[string]any{}
				for _, f := range []string{"name", "image", "command", "args"} {
					if v, ok := cm[f]; ok {
						slim[f] = v
					}
				}
				kept = append(kept, slim)
			}
			if kept != nil {
				podSpec[key] = kept
			}
		}
		t := map[string]any{"spec": podSpec}
		if labels, found, _ := unstructured.NestedMap(tmpl, "metadata", "labels"); found {
			t["metadata"] = map[string]any{"labels": labels}
		}
		spec["template"] = t
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": md, "spec": spec,
	}}, nil
}

// InformerView is the server's View, read from an informer cache.
type InformerView struct {
	cache          cache.Cache
	kueueNamespace string
	kueueConfig    atomic.Pointer[parsedKueueConfig]
	// unserved holds the kinds read as unstructured (scaled kinds, training
	// runtimes) whose CRD was not installed when the view started; their
	// informers start on the first request that needs them.
	unservedMu sync.Mutex
	unserved   map[schema.GroupVersionKind]bool
	// generation counts changes to ResourceFlavors, Cohorts and ClusterQueues;
	// capacities are recomputed only when it moved.
	generation atomic.Int64
	capacity   atomic.Pointer[computedCapacity]
}

// computedCapacity is Capacities at one generation.
type computedCapacity struct {
	generation int64
	caps       map[string][]Capacity
	err        error
}

// parsedKueueConfig memoises the parse of Kueue's Configuration per version of
// its ConfigMap.
type parsedKueueConfig struct {
	uid, resourceVersion string
	cfg                  *KueueConfig
	err                  error
}

var _ View = (*InformerView)(nil)

// NewInformerView registers informers for CachedTypes on c (so that the cache's
// sync covers them) and returns a View that reads from it. A kind read as
// unstructured whose CRD is not installed (LeaderWorkerSet, Kubeflow Trainer's
// runtimes on most clusters) is not an error: its informer starts when a
// request first needs it, which can only happen once the CRD is served.
func NewInformerView(ctx context.Context, c cache.Cache, kueueNamespace string) (*InformerView, error) {
	v := &InformerView{cache: c, kueueNamespace: kueueNamespace, unserved: map[schema.GroupVersionKind]bool{}}
	bump := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { v.generation.Add(1) },
		UpdateFunc: func(any, any) { v.generation.Add(1) },
		DeleteFunc: func(any) { v.generation.Add(1) },
	}
	for _, obj := range []client.Object{&kueue.ResourceFlavor{}, &kueue.Cohort{}, &kueue.ClusterQueue{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("registering informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(bump); err != nil {
			return nil, err
		}
	}
	for _, obj := range CachedTypes() {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() != deploymentGVK && meta.IsNoMatchError(err) {
				log.FromContext(ctx).Info("kind not served yet; watched once a request needs it", "kind", u.GroupVersionKind().String())
				v.unserved[u.GroupVersionKind()] = true
				continue
			}
			return nil, fmt.Errorf("registering informer for %T: %w", obj, err)
		}
	}
	return v, nil
}

// lazyInformerReady starts the informer of a kind that was not served at start.
// It reports an error until the informer has synced, so that a request is
// never judged against an empty cache.
func (v *InformerView) lazyInformerReady(gvk schema.GroupVersionKind) error {
	v.unservedMu.Lock()
	defer v.unservedMu.Unlock()
	if !v.unserved[gvk] {
		return nil
	}
	inf, err := v.cache.GetInformer(context.Background(), newUnstructured(gvk), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("kueue-guard cannot watch %s yet (%w); retry in a few seconds", gvk.Kind, err)
	}
	if !inf.HasSynced() {
		return fmt.Errorf("kueue-guard is still loading the cluster's %s objects; retry in a few seconds", gvk.Kind)
	}
	delete(v.unserved, gvk)
	return nil
}

// get reads from the in-memory store. The context is background: the store never
// blocks, and a cancelled request must not turn a hit into a miss.
func (v *InformerView) get(namespace, name string, obj client.Object) bool {
	return v.cache.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj) == nil
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

// KueueControllers implements View. It scans the cached (stripped) Deployments;
// callers ask only when an object under admission looks like a Kueue controller.
func (v *InformerView) KueueControllers() []ControllerRef {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(deploymentGVK.GroupVersion().WithKind("DeploymentList"))
	if err := v.cache.List(context.Background(), list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	objs := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	return controllersIn(objs)
}

// KueueFrameworks implements View.
func (v *InformerView) KueueFrameworks() ([]string, bool) {
	cfg, ok := v.KueueConfig()
	if !ok {
		return nil, false
	}
	return cfg.Frameworks, true
}

// KueueConfig implements View. The parse is memoised per version of the
// ConfigMap, so requests do not re-parse YAML.
func (v *InformerView) KueueConfig() (*KueueConfig, bool) {
	list := &corev1.ConfigMapList{}
	if err := v.cache.List(context.Background(), list, client.InNamespace(v.kueueNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	cms := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		cms[i] = &list.Items[i]
	}
	cm := kueueConfigMap(cms)
	if cm == nil {
		return nil, false
	}
	if p := v.kueueConfig.Load(); p != nil && p.uid == string(cm.UID) && p.resourceVersion == cm.ResourceVersion {
		return p.cfg, p.err == nil
	}
	cfg, err := ParseKueueConfig(cm.Data[KueueConfigKey], v.kueueNamespace)
	v.kueueConfig.Store(&parsedKueueConfig{uid: string(cm.UID), resourceVersion: cm.ResourceVersion, cfg: cfg, err: err})
	return cfg, err == nil
}

// ClusterQueueCapacity implements View. Capacities are computed once per
// change of the ResourceFlavors, Cohorts or ClusterQueues, not per request.
func (v *InformerView) ClusterQueueCapacity(name string) ([]Capacity, bool) {
	gen := v.generation.Load()
	c := v.capacity.Load()
	if c == nil || c.generation != gen {
		c = &computedCapacity{generation: gen}
		var rfs kueue.ResourceFlavorList
		var cohorts kueue.CohortList
		var cqs kueue.ClusterQueueList
		ctx := context.Background()
		if c.err = v.cache.List(ctx, &rfs); c.err == nil {
			if c.err = v.cache.List(ctx, &cohorts); c.err == nil {
				if c.err = v.cache.List(ctx, &cqs); c.err == nil {
					c.caps, c.err = Capacities(ctx, rfs.Items, cohorts.Items, cqs.Items)
				}
			}
		}
		v.capacity.Store(c)
	}
	if c.err != nil {
		return nil, false
	}
	caps, ok := c.caps[name]
	return caps, ok
}

// LimitRanges implements View. The store's objects are returned without a
// copy (callers must not modify them: the resource adjustment copies what it
// merges), as this runs for every summary.
func (v *InformerView) LimitRanges(namespace string) []corev1.LimitRange {
	list := &corev1.LimitRangeList{}
	if err := v.cache.List(context.Background(), list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return list.Items
}

// RuntimeClass implements View.
func (v *InformerView) RuntimeClass(name string) (*nodev1.RuntimeClass, bool) {
	rc := &nodev1.RuntimeClass{}
	return rc, v.get("", name, rc)
}

// TrainingRuntime implements View. While the runtimes' informer is starting
// (their CRD appeared after the server started) the runtime is not known, and
// the TrainJob is counted by its own fields.
func (v *InformerView) TrainingRuntime(kind, namespace, name string) (*unstructured.Unstructured, bool) {
	for _, gvk := range workload.TrainingRuntimeGVKs {
		if gvk.Kind != kind {
			continue
		}
		if err := v.lazyInformerReady(gvk); err != nil {
			return nil, false
		}
		u := newUnstructured(gvk)
		return u, v.get(namespace, name, u)
	}
	return nil, false
}

// ScaleTarget implements View.
func (v *InformerView) ScaleTarget(gk schema.GroupKind, namespace, name string) (*unstructured.Unstructured, bool, error) {
	in, ok := integrations.Lookup(gk)
	if !ok || !in.ScaleJudged {
		return nil, false, nil
	}
	if err := v.lazyInformerReady(in.GVK); err != nil {
		return nil, false, err
	}
	u := newUnstructured(in.GVK)
	if !v.get(namespace, name, u) || !queued(u) {
		return nil, false, nil
	}
	return u, true, nil
}
