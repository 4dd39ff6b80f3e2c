package cluster

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// Snapshot is a View over a fixed set of objects: the offline reviewer's cluster
// state, and the unit tests' cluster. It is not safe for concurrent Add and reads
// (reads may run concurrently).
type Snapshot struct {
	kueueNamespace string
	// kueueAway is set for a cluster without Kueue serving.
	kueueAway     bool
	namespaces    map[string]*corev1.Namespace
	localQueues   map[types.NamespacedName]*kueue.LocalQueue
	clusterQueues map[string]*kueue.ClusterQueue
	configMaps    map[types.NamespacedName]*corev1.ConfigMap
	deployments   map[types.NamespacedName]*unstructured.Unstructured
	scaled        map[scaledKey]*unstructured.Unstructured
	// parents are the objects of kinds Kueue may ignore (Parent).
	parents        map[scaledKey]*unstructured.Unstructured
	limitRanges    map[types.NamespacedName]*corev1.LimitRange
	runtimeClasses map[string]*nodev1.RuntimeClass
	flavors        map[string]*kueue.ResourceFlavor
	cohorts        map[string]*kueue.Cohort
	runtimes       map[runtimeKey]*unstructured.Unstructured
	claimTemplates map[types.NamespacedName]*resourcev1.ResourceClaimTemplate
	deviceClasses  map[string]*resourcev1.DeviceClass
	// caps memoises Capacities until the next Add.
	capsMu sync.Mutex
	caps   map[string][]Capacity
}

// runtimeKey is a training runtime's kind, namespace (empty for a
// ClusterTrainingRuntime) and name.
type runtimeKey struct{ kind, namespace, name string }

type scaledKey struct {
	gk              schema.GroupKind
	namespace, name string
}

var _ View = (*Snapshot)(nil)

// DefaultKueueNamespace is where Kueue is installed unless configured otherwise.
const DefaultKueueNamespace = "kueue-system"

// NewSnapshot builds a Snapshot from objects, with Kueue in its default namespace;
// see Add.
func NewSnapshot(objs ...client.Object) (*Snapshot, error) {
	s := &Snapshot{
		kueueNamespace: DefaultKueueNamespace,
		namespaces:     map[string]*corev1.Namespace{},
		localQueues:    map[types.NamespacedName]*kueue.LocalQueue{},
		clusterQueues:  map[string]*kueue.ClusterQueue{},
		configMaps:     map[types.NamespacedName]*corev1.ConfigMap{},
		deployments:    map[types.NamespacedName]*unstructured.Unstructured{},
		scaled:         map[scaledKey]*unstructured.Unstructured{},
		parents:        map[scaledKey]*unstructured.Unstructured{},
		limitRanges:    map[types.NamespacedName]*corev1.LimitRange{},
		runtimeClasses: map[string]*nodev1.RuntimeClass{},
		flavors:        map[string]*kueue.ResourceFlavor{},
		cohorts:        map[string]*kueue.Cohort{},
		runtimes:       map[runtimeKey]*unstructured.Unstructured{},
		claimTemplates: map[types.NamespacedName]*resourcev1.ResourceClaimTemplate{},
		deviceClasses:  map[string]*resourcev1.DeviceClass{},
	}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetKueueNamespace says where Kueue's ConfigMap is.
func (s *Snapshot) SetKueueNamespace(ns string) { s.kueueNamespace = ns }

// Add puts one object into the snapshot, replacing any with the same key. Objects
// of kinds the view does not hold are an error, so a typo in a state file is not
// silently ignored.
func (s *Snapshot) Add(obj client.Object) error {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	s.caps = nil
	switch o := obj.(type) {
	case *kueue.ResourceFlavor:
		s.flavors[o.Name] = o
	case *kueue.Cohort:
		s.cohorts[o.Name] = o
	case *corev1.Namespace:
		s.namespaces[o.Name] = o
	case *kueue.LocalQueue:
		s.localQueues[key] = o
	case *kueue.ClusterQueue:
		s.clusterQueues[o.Name] = o
	case *corev1.ConfigMap:
		s.configMaps[key] = o
	case *corev1.LimitRange:
		s.limitRanges[key] = o
	case *nodev1.RuntimeClass:
		s.runtimeClasses[o.Name] = o
	case *resourcev1.ResourceClaimTemplate:
		s.claimTemplates[key] = o
	case *resourcev1.DeviceClass:
		s.deviceClasses[o.Name] = o
	case *unstructured.Unstructured:
		return s.addUnstructured(key, o)
	case *appsv1.Deployment:
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(deploymentGVK)
		return s.addUnstructured(key, u)
	default:
		return fmt.Errorf("cluster snapshot cannot hold %T", obj)
	}
	return nil
}

// addUnstructured files a Deployment (read by the controller fingerprint) and any
// kind whose scale is judged (a Deployment is both).
func (s *Snapshot) addUnstructured(key types.NamespacedName, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	held := false
	if gvk == deploymentGVK {
		s.deployments[key] = o
		held = true
	}
	if scaledKind(gvk) {
		s.scaled[scaledKey{gvk.GroupKind(), key.Namespace, key.Name}] = o
		held = true
	}
	if isParentKind(gvk) {
		s.parents[scaledKey{gvk.GroupKind(), key.Namespace, key.Name}] = o
		held = true
	}
	for _, rt := range workload.TrainingRuntimeGVKs {
		if gvk == rt {
			s.runtimes[runtimeKey{gvk.Kind, key.Namespace, key.Name}] = o
			held = true
		}
	}
	if !held {
		return fmt.Errorf("cluster snapshot cannot hold %s", gvk)
	}
	return nil
}

// LimitRanges implements View, in name order.
func (s *Snapshot) LimitRanges(namespace string) []corev1.LimitRange {
	var out []corev1.LimitRange
	for k, lr := range s.limitRanges {
		if k.Namespace == namespace {
			out = append(out, *lr)
		}
	}
	slices.SortFunc(out, func(a, b corev1.LimitRange) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// QueuesKnown implements View: a snapshot holds every queue there is.
func (s *Snapshot) QueuesKnown() bool { return true }

// KueueServing implements View: a snapshot judges as if Kueue were there,
// unless told otherwise (SetKueueServing).
func (s *Snapshot) KueueServing() bool { return !s.kueueAway }

// SetKueueServing says whether Kueue serves in the cluster the snapshot
// stands for; it does by default.
func (s *Snapshot) SetKueueServing(serving bool) { s.kueueAway = !serving }

// KueueDefaultQueueRemembered implements View: a snapshot knows its queues
// or has none.
func (s *Snapshot) KueueDefaultQueueRemembered(string) bool { return false }

// KueueWebhooksFirst implements View: a snapshot does not know the order.
func (s *Snapshot) KueueWebhooksFirst() []string { return nil }

// TrainingRuntime implements View.
func (s *Snapshot) TrainingRuntime(kind, namespace, name string) (*unstructured.Unstructured, bool) {
	u, ok := s.runtimes[runtimeKey{kind, namespace, name}]
	return u, ok
}

// RuntimeClass implements View.
func (s *Snapshot) RuntimeClass(name string) (*nodev1.RuntimeClass, bool) {
	rc, ok := s.runtimeClasses[name]
	return rc, ok
}

// KueueObjects lists the snapshot's Kueue objects, each kind sorted by key.
func (s *Snapshot) KueueObjects() KueueObjects {
	var o KueueObjects
	for _, k := range slices.Sorted(maps.Keys(s.flavors)) {
		o.Flavors = append(o.Flavors, *s.flavors[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.cohorts)) {
		o.Cohorts = append(o.Cohorts, *s.cohorts[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.clusterQueues)) {
		o.ClusterQueues = append(o.ClusterQueues, *s.clusterQueues[k])
	}
	keys := slices.SortedFunc(maps.Keys(s.localQueues), func(a, b types.NamespacedName) int { return cmp.Compare(a.String(), b.String()) })
	for _, k := range keys {
		o.LocalQueues = append(o.LocalQueues, *s.localQueues[k])
	}
	return o
}

// ClusterQueueCapacity implements View.
func (s *Snapshot) ClusterQueueCapacity(name string) ([]Capacity, bool) {
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	if s.caps == nil {
		var rfs []kueue.ResourceFlavor
		for _, rf := range s.flavors {
			rfs = append(rfs, *rf)
		}
		var cohorts []kueue.Cohort
		for _, c := range s.cohorts {
			cohorts = append(cohorts, *c)
		}
		var cqs []kueue.ClusterQueue
		for _, cq := range s.clusterQueues {
			cqs = append(cqs, *cq)
		}
		caps, err := Capacities(context.Background(), rfs, cohorts, cqs)
		if err != nil {
			return nil, false
		}
		s.caps = caps
	}
	caps, ok := s.caps[name]
	return caps, ok
}

// Namespace implements View.
func (s *Snapshot) Namespace(name string) (*corev1.Namespace, bool) {
	ns, ok := s.namespaces[name]
	return ns, ok
}

// LocalQueue implements View.
func (s *Snapshot) LocalQueue(namespace, name string) (*kueue.LocalQueue, bool) {
	lq, ok := s.localQueues[types.NamespacedName{Namespace: namespace, Name: name}]
	return lq, ok
}

// ClusterQueue implements View.
func (s *Snapshot) ClusterQueue(name string) (*kueue.ClusterQueue, bool) {
	cq, ok := s.clusterQueues[name]
	return cq, ok
}

// KueueControllers implements View.
func (s *Snapshot) KueueControllers() []ControllerRef {
	objs := make([]*unstructured.Unstructured, 0, len(s.deployments))
	for _, d := range s.deployments {
		objs = append(objs, d)
	}
	return controllersIn(objs)
}

// KueueFrameworks implements View.
func (s *Snapshot) KueueFrameworks() ([]string, bool) {
	cfg, ok := s.KueueConfig()
	if !ok {
		return nil, false
	}
	return cfg.Frameworks, true
}

// KueueConfig implements View.
func (s *Snapshot) KueueConfig() (*KueueConfig, bool) {
	var cms []*corev1.ConfigMap
	for k, cm := range s.configMaps {
		if k.Namespace == s.kueueNamespace {
			cms = append(cms, cm)
		}
	}
	cm := kueueConfigMap(cms)
	if cm == nil {
		return nil, false
	}
	cfg, err := ParseKueueConfig(cm.Data[KueueConfigKey], s.kueueNamespace)
	return cfg, err == nil
}

// ScaleTarget implements View: the queued workloads of scaled kinds that were
// added.
func (s *Snapshot) ScaleTarget(gk schema.GroupKind, namespace, name string, _ types.UID) (*unstructured.Unstructured, bool, error) {
	u, ok := s.scaled[scaledKey{gk, namespace, name}]
	if !ok || !queued(u) {
		return nil, false, nil
	}
	return u, true, nil
}

func scaledKind(gvk schema.GroupVersionKind) bool {
	in, ok := integrations.Lookup(gvk.GroupKind())
	return ok && in.ScaleJudged && in.GVK == gvk
}
