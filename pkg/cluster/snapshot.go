package cluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Snapshot is a View over a fixed set of objects: the offline reviewer's cluster
// state, and the unit tests' cluster. It is not safe for concurrent Add and reads.
type Snapshot struct {
	namespaces    map[string]*corev1.Namespace
	localQueues   map[types.NamespacedName]*kueue.LocalQueue
	clusterQueues map[string]*kueue.ClusterQueue
}

var _ View = (*Snapshot)(nil)

// NewSnapshot builds a Snapshot from typed objects; see Add.
func NewSnapshot(objs ...client.Object) (*Snapshot, error) {
	s := &Snapshot{
		namespaces:    map[string]*corev1.Namespace{},
		localQueues:   map[types.NamespacedName]*kueue.LocalQueue{},
		clusterQueues: map[string]*kueue.ClusterQueue{},
	}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add puts one object into the snapshot, replacing any with the same key. Objects
// of kinds the view does not hold are an error, so a typo in a state file is not
// silently ignored.
func (s *Snapshot) Add(obj client.Object) error {
	switch o := obj.(type) {
	case *corev1.Namespace:
		s.namespaces[o.Name] = o
	case *kueue.LocalQueue:
		s.localQueues[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o
	case *kueue.ClusterQueue:
		s.clusterQueues[o.Name] = o
	default:
		return fmt.Errorf("cluster snapshot cannot hold %T", obj)
	}
	return nil
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
