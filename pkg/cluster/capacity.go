package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schedcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/resources"
)

// Capacity is the most one ClusterQueue can ever give of one resource in one
// flavor: its own quota plus what it may borrow through its cohort tree
// (borrowing limits, other queues' lending limits, parent cohorts' quotas), as
// Kueue's scheduler computes it (ClusterQueueSnapshot.PotentialAvailable).
type Capacity struct {
	Flavor   string
	Resource corev1.ResourceName
	Max      resource.Quantity
}

// Capacities computes every ClusterQueue's capacities with Kueue's own
// scheduler cache, fed the ResourceFlavors, Cohorts and ClusterQueues (usage is
// not needed: capacity is what could ever be admitted). A flavor a queue names
// that does not exist (yet) is taken as existing: capacity is the structure's,
// and whether Kueue admits to the queue now is its status's to say
// (input.clusterQueue.active). A queue Kueue leaves out for another reason (an
// admission check missing) has none. Sorted by flavor, then resource.
func Capacities(ctx context.Context, flavors []kueue.ResourceFlavor, cohorts []kueue.Cohort, cqs []kueue.ClusterQueue) (map[string][]Capacity, error) {
	c, err := NewKueueCache(ctx, KueueObjects{Flavors: flavors, Cohorts: cohorts, ClusterQueues: cqs, AssumeNamedFlavors: true})
	if err != nil {
		return nil, err
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]Capacity{}
	for i := range cqs {
		cs := snap.ClusterQueue(kueue.ClusterQueueReference(cqs[i].Name))
		if cs == nil {
			continue
		}
		var caps []Capacity
		for _, rg := range cs.ResourceGroups {
			for _, f := range rg.Flavors {
				for r := range rg.CoveredResources {
					v := cs.PotentialAvailable(resources.FlavorResource{Flavor: f, Resource: r})
					caps = append(caps, Capacity{Flavor: string(f), Resource: r, Max: (*resources.ResourceFormatter)(nil).ResourceQuantity(r, v.Int64())})
				}
			}
		}
		slices.SortFunc(caps, func(a, b Capacity) int {
			return cmp.Or(cmp.Compare(a.Flavor, b.Flavor), cmp.Compare(a.Resource, b.Resource))
		})
		out[cqs[i].Name] = caps
	}
	return out, nil
}

// KueueObjects are what Kueue's scheduler cache is built from.
type KueueObjects struct {
	Flavors       []kueue.ResourceFlavor
	Cohorts       []kueue.Cohort
	ClusterQueues []kueue.ClusterQueue
	LocalQueues   []kueue.LocalQueue
	// AssumeNamedFlavors takes a flavor a queue names that does not exist
	// (yet) as existing, for capacities (see Capacities); without it the
	// queue is inactive, as in Kueue.
	AssumeNamedFlavors bool
}

// NewKueueCache builds Kueue's own scheduler cache from the objects, with no
// Workload in it: the one place a Kueue scheduler view is made, for
// capacities and for simulations (which add the admitted Workloads).
func NewKueueCache(ctx context.Context, objs KueueObjects, opts ...schedcache.Option) (*schedcache.Cache, error) {
	flavors, cohorts, cqs := objs.Flavors, objs.Cohorts, objs.ClusterQueues
	log := logr.Discard()
	c := schedcache.New(emptyReader{}, opts...)
	known := map[kueue.ResourceFlavorReference]bool{}
	for i := range flavors {
		c.AddOrUpdateResourceFlavor(log, &flavors[i])
		known[kueue.ResourceFlavorReference(flavors[i].Name)] = true
	}
	named := func(groups []kueue.ResourceGroup) {
		if !objs.AssumeNamedFlavors {
			return
		}
		for _, rg := range groups {
			for _, f := range rg.Flavors {
				if !known[f.Name] {
					known[f.Name] = true
					c.AddOrUpdateResourceFlavor(log, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: string(f.Name)}})
				}
			}
		}
	}
	for i := range cqs {
		named(cqs[i].Spec.ResourceGroups)
	}
	for i := range cohorts {
		named(cohorts[i].Spec.ResourceGroups)
	}
	for i := range cohorts {
		if err := c.AddOrUpdateCohort(&cohorts[i]); err != nil {
			return nil, fmt.Errorf("cohort %s: %w", cohorts[i].Name, err)
		}
	}
	for i := range cqs {
		if err := c.AddClusterQueue(ctx, &cqs[i]); err != nil {
			return nil, fmt.Errorf("ClusterQueue %s: %w", cqs[i].Name, err)
		}
	}
	for i := range objs.LocalQueues {
		if err := c.AddLocalQueue(&objs.LocalQueues[i]); err != nil {
			return nil, fmt.Errorf("LocalQueue %s/%s: %w", objs.LocalQueues[i].Namespace, objs.LocalQueues[i].Name, err)
		}
	}
	return c, nil
}

// emptyReader is the client Kueue's scheduler cache reads LocalQueues and
// Workloads through when a ClusterQueue is added: capacity needs neither, so
// every list is empty and every get not found. Nothing else is called.
type emptyReader struct{ client.Client }

func (emptyReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	return meta.SetList(list, nil)
}

func (emptyReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}
