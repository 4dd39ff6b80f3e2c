package cluster

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kueueConfigMemo keeps Kueue's Configuration as the view last read it: the
// lookup per generation of the ConfigMaps in Kueue's namespace, and the parse
// per version of its ConfigMap. Every summarized request asks for it, and
// listing the namespace's ConfigMaps each time was about 4 % of a validated
// request's CPU under load (make bench, a profile of the server).
type kueueConfigMemo struct {
	// generation counts the events of ConfigMaps in Kueue's namespace.
	generation atomic.Int64
	found      atomic.Pointer[foundKueueConfig]
	parsed     atomic.Pointer[parsedKueueConfig]
}

// foundKueueConfig is KueueConfig's answer at one generation.
type foundKueueConfig struct {
	generation int64
	cfg        *KueueConfig
	ok         bool
}

// parsedKueueConfig memoises the parse of Kueue's Configuration per version of
// its ConfigMap.
type parsedKueueConfig struct {
	uid, resourceVersion string
	cfg                  *KueueConfig
	err                  error
}

// watchKueueConfig moves the memo's generation with every event of a
// ConfigMap in Kueue's namespace. An informer calls its handlers after its
// store has changed, so an answer memoised at an older generation is read
// again.
func (v *InformerView) watchKueueConfig(ctx context.Context) error {
	inf, err := v.cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("registering informer for ConfigMaps: %w", err)
	}
	bump := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(metav1.Object); !ok || o.GetNamespace() == v.kueueNamespace {
			v.kueueConfig.generation.Add(1)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: bump, UpdateFunc: func(_, obj any) { bump(obj) }, DeleteFunc: bump,
	})
	return err
}

// KueueConfig implements View: Kueue's Configuration from its ConfigMap in
// the cache, read again only once a ConfigMap of Kueue's namespace changed.
func (v *InformerView) KueueConfig() (*KueueConfig, bool) {
	m := &v.kueueConfig
	gen := m.generation.Load()
	if f := m.found.Load(); f != nil && f.generation == gen {
		return f.cfg, f.ok
	}
	cfg, ok, err := v.readKueueConfig()
	if err != nil {
		// The cache could not be read (not started yet): no answer to keep.
		return nil, false
	}
	m.found.Store(&foundKueueConfig{generation: gen, cfg: cfg, ok: ok})
	return cfg, ok
}

// readKueueConfig finds Kueue's ConfigMap in the cache and parses it, once per
// version; err is the cache's.
func (v *InformerView) readKueueConfig() (*KueueConfig, bool, error) {
	list := &corev1.ConfigMapList{}
	if err := v.cache.List(context.Background(), list, client.InNamespace(v.kueueNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, false, err
	}
	cms := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		cms[i] = &list.Items[i]
	}
	cm := kueueConfigMap(cms)
	if cm == nil {
		return nil, false, nil
	}
	if p := v.kueueConfig.parsed.Load(); p != nil && p.uid == string(cm.UID) && p.resourceVersion == cm.ResourceVersion {
		return p.cfg, p.err == nil, nil
	}
	cfg, err := ParseKueueConfig(cm.Data[KueueConfigKey], v.kueueNamespace)
	v.kueueConfig.parsed.Store(&parsedKueueConfig{uid: string(cm.UID), resourceVersion: cm.ResourceVersion, cfg: cfg, err: err})
	return cfg, err == nil, nil
}
