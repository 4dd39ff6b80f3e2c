package cluster

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kueueConfigMemo keeps Kueue's Configuration as the view last read it, per
// generation of the cached ConfigMaps (the cache holds Kueue's namespace's
// only, CacheOptions). Every summarized request asks for it, and listing
// those ConfigMaps each time was about 4 % of a validated request's CPU under
// load (make bench, a profile of the server).
type kueueConfigMemo struct {
	// generation counts the ConfigMaps' events.
	generation atomic.Int64
	found      atomic.Pointer[foundKueueConfig]
}

// foundKueueConfig is KueueConfig's answer at one generation.
type foundKueueConfig struct {
	generation int64
	cfg        *KueueConfig
	ok         bool
}

// watchKueueConfig moves the memo's generation with every ConfigMap event. An
// informer calls its handlers after its store has changed, so an answer
// memoised at an older generation is read again.
func (v *InformerView) watchKueueConfig(ctx context.Context) error {
	inf, err := v.cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("registering informer for ConfigMaps: %w", err)
	}
	_, err = inf.AddEventHandler(countEvents(&v.kueueConfig.generation))
	return err
}

// KueueConfig implements View: Kueue's Configuration from its ConfigMap in
// the cache, read and parsed again only once a cached ConfigMap changed.
func (v *InformerView) KueueConfig() (*KueueConfig, bool) {
	m := &v.kueueConfig
	gen := m.generation.Load()
	if f := m.found.Load(); f != nil && f.generation == gen {
		return f.cfg, f.ok
	}
	list := &corev1.ConfigMapList{}
	if err := v.cache.List(context.Background(), list, client.InNamespace(v.kueueNamespace), client.UnsafeDisableDeepCopy); err != nil {
		// The cache could not be read (not started yet): no answer to keep.
		return nil, false
	}
	f := &foundKueueConfig{generation: gen}
	cms := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		cms[i] = &list.Items[i]
	}
	if cm := kueueConfigMap(cms); cm != nil {
		cfg, err := ParseKueueConfig(cm.Data[KueueConfigKey], v.kueueNamespace)
		f.cfg, f.ok = cfg, err == nil
	}
	m.found.Store(f)
	return f.cfg, f.ok
}
