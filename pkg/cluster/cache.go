package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueueorder"
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
	objs := requiredTypes()
	for _, t := range optionalTypes() {
		objs = append(objs, t.obj)
	}
	return append(objs, newUnstructured(crdGVK), &resourcev1.ResourceClaimTemplate{}, &resourcev1.DeviceClass{})
}

// requiredTypes are served by every API server: the server does not start
// without them.
func requiredTypes() []client.Object {
	return []client.Object{&corev1.Namespace{}, &corev1.ConfigMap{}, newDeployment(),
		&corev1.LimitRange{}, &nodev1.RuntimeClass{}, &schedulingv1.PriorityClass{},
		// Not read by the pipeline: the server's webhook order check watches them.
		&admissionregistrationv1.MutatingWebhookConfiguration{}}
}

// optionalTypes are served by CRDs that may come and go: Kueue's own kinds,
// the kinds whose scale is judged, and Kubeflow Trainer's runtimes (Kueue
// builds a TrainJob's pod sets from the runtime it names).
func optionalTypes() []typedKind {
	out := []typedKind{
		{kueue.SchemeGroupVersion.WithKind("LocalQueue"), &kueue.LocalQueue{}},
		{kueue.SchemeGroupVersion.WithKind("ClusterQueue"), &kueue.ClusterQueue{}},
		{kueue.SchemeGroupVersion.WithKind("ResourceFlavor"), &kueue.ResourceFlavor{}},
		{kueue.SchemeGroupVersion.WithKind("Cohort"), &kueue.Cohort{}},
		{workloadGVK, &kueue.Workload{}},
		{workloadPriorityClassGVK, &kueue.WorkloadPriorityClass{}},
	}
	for _, in := range integrations.ScaleJudged() {
		if in.GVK != deploymentGVK {
			out = append(out, typedKind{in.GVK, newUnstructured(in.GVK)})
		}
	}
	for _, gvk := range workload.TrainingRuntimeGVKs {
		out = append(out, typedKind{gvk, newUnstructured(gvk)})
	}
	for _, gvk := range parentKinds {
		out = append(out, typedKind{gvk, newUnstructured(gvk)})
	}
	return out
}

// typedKind is a kind and an empty object of it.
type typedKind struct {
	gvk schema.GroupVersionKind
	obj client.Object
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

// InformerView is the server's View, read from an informer cache.
type InformerView struct {
	cache cache.Cache
	// live reads the API server directly, for the few decisions a lagging
	// cache must not make (crdLeaving).
	live           client.Reader
	kueueNamespace string
	// ownMutating names kueue-guard's mutating webhook configuration, to
	// tell which of Kueue's run before it (KueueWebhooksFirst).
	ownMutating string
	kueueConfig kueueConfigMemo
	serving     atomic.Pointer[servingState]
	// optional are the kinds served by CRDs, whose informers follow them.
	optional *optionalKinds
	// kueue are Kueue's kinds among them.
	kueue []*optionalKind
	// stop ends the informer starts in progress when the server stops.
	stop context.CancelFunc
	// generation counts changes to ResourceFlavors, Cohorts and ClusterQueues
	// (and their informers starting or stopping); capacities are recomputed
	// only when it moved.
	generation atomic.Int64
	capacity   atomic.Pointer[computedCapacity]
	// schedGeneration counts changes to what Kueue's scheduler reads
	// (SchedulingGeneration).
	schedGeneration atomic.Int64
	// defaults are the namespaces with Kueue's default LocalQueue, kept
	// while Kueue's API is away.
	defaults defaultQueues
	// namespaces and runtimeClasses are required kinds' informers, read
	// without a copy (stored); localQueues and clusterQueues are Kueue's.
	namespaces, runtimeClasses toolscache.SharedIndexInformer
	localQueues, clusterQueues *optionalKind
}

// computedCapacity is Capacities at one generation.
type computedCapacity struct {
	generation int64
	caps       map[string][]Capacity
	err        error
}

var _ View = (*InformerView)(nil)

// NewInformerView registers informers for CachedTypes on c (so that the cache's
// sync covers them) and returns a View that reads from it. A kind served by a
// CRD that is not installed, or does not serve the version this build reads
// (Kueue itself before it is installed, LeaderWorkerSet, Kubeflow Trainer's
// runtimes), is not an error: the view watches the cluster's CRDs and starts
// the kind's informer when its CRD serves it, and removes it when it goes.
// Until then its objects are unknown (see QueuesKnown). Start the view with
// the cache (it is a manager Runnable). live reads the API server directly.
func NewInformerView(ctx context.Context, c cache.Cache, live client.Reader, kueueNamespace string) (*InformerView, error) {
	run, stop := context.WithCancel(context.Background())
	v := &InformerView{cache: c, live: live, kueueNamespace: kueueNamespace, stop: stop}
	v.optional = &optionalKinds{cache: c, logger: log.FromContext(ctx).WithName("crds"),
		byGVK: map[schema.GroupVersionKind]*optionalKind{}, changed: func() { v.generation.Add(1) }}
	bump := countEvents(&v.generation)
	capacityInput := map[schema.GroupVersionKind]bool{
		kueue.SchemeGroupVersion.WithKind("ResourceFlavor"): true, kueue.SchemeGroupVersion.WithKind("Cohort"): true,
		kueue.SchemeGroupVersion.WithKind("ClusterQueue"): true,
	}
	for _, obj := range requiredTypes() {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("registering informer for %T: %w", obj, err)
		}
	}
	var err error
	if v.namespaces, err = indexInformer(ctx, c, &corev1.Namespace{}); err != nil {
		return nil, err
	}
	if v.runtimeClasses, err = indexInformer(ctx, c, &nodev1.RuntimeClass{}); err != nil {
		return nil, err
	}
	if err := watchClaimTemplates(ctx, c); err != nil {
		return nil, err
	}
	if err := v.watchPriorityClasses(ctx); err != nil {
		return nil, err
	}
	if err := v.watchKueueConfig(ctx); err != nil {
		return nil, err
	}
	for _, t := range optionalTypes() {
		gvk := t.gvk
		k := &optionalKind{gvk: gvk, new: newObjectLike(t.obj)}
		var handlers []toolscache.ResourceEventHandler
		if capacityInput[gvk] {
			handlers = append(handlers, bump)
		}
		if schedulingInput[gvk] {
			handlers = append(handlers, v.schedulingBump())
		}
		isLocalQueue := gvk == kueue.SchemeGroupVersion.WithKind("LocalQueue")
		k.onStart = func(inf toolscache.SharedIndexInformer) error {
			hs := handlers
			if isLocalQueue {
				v.defaults.reset()
				hs = append(slices.Clip(hs), v.defaults.handler(v.crdLeaving))
			}
			for _, h := range hs {
				if _, err := inf.AddEventHandler(h); err != nil {
					return err
				}
			}
			return nil
		}
		if gvk.Group == kueue.SchemeGroupVersion.Group && !schedulingOnly(gvk) {
			v.kueue = append(v.kueue, k)
		}
		if err := v.optional.register(ctx, k); err != nil {
			return nil, err
		}
	}
	v.localQueues = v.optional.byGVK[kueue.SchemeGroupVersion.WithKind("LocalQueue")]
	v.clusterQueues = v.optional.byGVK[kueue.SchemeGroupVersion.WithKind("ClusterQueue")]
	crds, err := c.GetInformer(ctx, newUnstructured(crdGVK))
	if err != nil {
		return nil, fmt.Errorf("registering informer for CustomResourceDefinitions: %w", err)
	}
	follow := func(obj any, deleted bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			v.optional.crdChanged(run, u, deleted)
		}
	}
	if _, err := crds.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { follow(obj, false) },
		UpdateFunc: func(_, obj any) { follow(obj, false) },
		DeleteFunc: func(obj any) { follow(obj, true) },
	}); err != nil {
		return nil, err
	}
	return v, nil
}

// newObjectLike returns a constructor of empty objects of obj's kind.
func newObjectLike(obj client.Object) func() client.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		return func() client.Object { return newUnstructured(gvk) }
	}
	return func() client.Object { return obj.DeepCopyObject().(client.Object) }
}

// Start implements manager.Runnable: it ends the view's background informer
// starts when the server stops.
func (v *InformerView) Start(ctx context.Context) error {
	<-ctx.Done()
	v.stop()
	return nil
}

// QueuesKnown implements View: Kueue's kinds are served at the version this
// build reads, and their informers have synced.
func (v *InformerView) QueuesKnown() bool {
	for _, k := range v.kueue {
		if !k.known() {
			return false
		}
	}
	return true
}

// KueueServing implements View. What it saw is kept for servingTTL, so that a
// burst of requests lists the webhook configurations once. A list that fails
// reads as not serving: suspending a queued workload Kueue would have
// suspended itself changes nothing.
func (v *InformerView) KueueServing() bool {
	now := time.Now().UnixNano()
	if s := v.serving.Load(); s != nil && now-s.at < int64(servingTTL) {
		return s.serving
	}
	state := &servingState{at: now}
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := v.cache.List(context.Background(), list, client.UnsafeDisableDeepCopy); err == nil {
		state.serving = v.QueuesKnown() && kueueorder.Registered(list.Items)
		for _, p := range kueueorder.Check(v.ownMutating, list.Items) {
			state.first = append(state.first, p.Configuration)
		}
	}
	v.serving.Store(state)
	return state.serving
}

// SetOwnMutatingConfiguration names kueue-guard's mutating webhook
// configuration; call it before the view serves requests.
func (v *InformerView) SetOwnMutatingConfiguration(name string) { v.ownMutating = name }

// KueueWebhooksFirst implements View, from the same list as KueueServing.
func (v *InformerView) KueueWebhooksFirst() []string {
	v.KueueServing()
	if s := v.serving.Load(); s != nil {
		return s.first
	}
	return nil
}

// servingTTL is how long KueueServing keeps an answer.
const servingTTL = 250 * time.Millisecond

type servingState struct {
	at      int64
	serving bool
	// first are the configurations of Kueue's webhooks that run before ours.
	first []string
}

// optionalReady says why an optional kind cannot be read yet, so that a
// request is never judged against an empty cache.
func (v *InformerView) optionalReady(gvk schema.GroupVersionKind) error {
	k, ok := v.optional.byGVK[gvk]
	if !ok || k.known() {
		return nil
	}
	if k.informer.Load() == nil {
		return fmt.Errorf("kueue-guard cannot watch %s yet (its API %s is not served); retry in a few seconds", gvk.Kind, gvk.GroupVersion())
	}
	return fmt.Errorf("kueue-guard is still loading the cluster's %s objects; retry in a few seconds", gvk.Kind)
}

// get reads from the in-memory store. The context is background: the store never
// blocks, and a cancelled request must not turn a hit into a miss.
func (v *InformerView) get(namespace, name string, obj client.Object) bool {
	return v.cache.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj) == nil
}

// Namespace implements View.
func (v *InformerView) Namespace(name string) (*corev1.Namespace, bool) {
	return stored[*corev1.Namespace](v.namespaces, "", name)
}

// LocalQueue implements View.
func (v *InformerView) LocalQueue(namespace, name string) (*kueue.LocalQueue, bool) {
	return stored[*kueue.LocalQueue](v.localQueues.store(), namespace, name)
}

// ClusterQueue implements View.
func (v *InformerView) ClusterQueue(name string) (*kueue.ClusterQueue, bool) {
	return stored[*kueue.ClusterQueue](v.clusterQueues.store(), "", name)
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
	return stored[*nodev1.RuntimeClass](v.runtimeClasses, "", name)
}

// TrainingRuntime implements View. While the runtimes' informer is starting
// (their CRD appeared after the server started) the runtime is not known, and
// the TrainJob is counted by its own fields.
func (v *InformerView) TrainingRuntime(kind, namespace, name string) (*unstructured.Unstructured, bool) {
	for _, gvk := range workload.TrainingRuntimeGVKs {
		if gvk.Kind != kind {
			continue
		}
		if err := v.optionalReady(gvk); err != nil {
			return nil, false
		}
		u := newUnstructured(gvk)
		return u, v.get(namespace, name, u)
	}
	return nil, false
}

// ScaleTarget implements View.
func (v *InformerView) ScaleTarget(gk schema.GroupKind, namespace, name string, uid types.UID) (*unstructured.Unstructured, bool, error) {
	in, ok := integrations.Lookup(gk)
	if !ok || !in.ScaleJudged {
		return nil, false, nil
	}
	if err := v.optionalReady(in.GVK); err != nil {
		return nil, false, err
	}
	// Every object of the kind is cached, queued or not: one missing, or
	// another by that name, was made after the cache last heard, and may
	// be queued. A tenant scaling right after creating is told to retry.
	u := newUnstructured(in.GVK)
	if !v.get(namespace, name, u) || (uid != "" && u.GetUID() != uid) {
		return nil, false, fmt.Errorf("kueue-guard has not seen %s %s/%s yet (it was made a moment ago): retry the scale",
			in.GVK.Kind, namespace, name)
	}
	if size, trimmed := u.GetAnnotations()[cacheTrimmedAnnotation]; trimmed {
		return nil, false, fmt.Errorf("%s %s/%s (about %s bytes) is larger than kueue-guard keeps of a workload (%d): "+
			"its scale cannot be judged; change spec.replicas with an update of the object instead", in.GVK.Kind, namespace, name, size, maxCachedWorkload)
	}
	if !queued(u) {
		return nil, false, nil
	}
	return u, true, nil
}

// countEvents is an informer handler that moves n with every event: a
// generation that memoised answers compare theirs with.
func countEvents(n *atomic.Int64) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { n.Add(1) },
		UpdateFunc: func(any, any) { n.Add(1) },
		DeleteFunc: func(any) { n.Add(1) },
	}
}
