package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	guardserver "github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// scaleWorkers is how many objects are created at once.
const scaleWorkers = 16

// scaleCounts are the objects of the scale figure; one LocalQueue per namespace.
type scaleCounts struct {
	Namespaces, LocalQueues, ClusterQueues, Deployments int
}

// scaleResult is the scale figure: kueue-guard's memory in a large cluster.
type scaleResult struct {
	// Counts are the objects created (they are what was asked unless creating
	// them failed).
	Counts scaleCounts
	// Create is how long creating them took; Sync how long a freshly started
	// kueue-guard took to be ready and to know the last LocalQueue.
	Create, Sync time.Duration
	// RSS is the largest VmRSS sampled over rssWindow once synced; HWM the
	// process's high-water mark then (its start-up peak).
	RSS, HWM uint64
}

// rssWindow is how long the resident set is sampled, once a second.
const rssWindow = 10 * time.Second

// scaleNames name the scale objects.
func scaleNamespace(i int) string    { return fmt.Sprintf("scale-%05d", i) }
func scaleClusterQueue(i int) string { return fmt.Sprintf("scale-cq-%04d", i) }

const scaleLocalQueue = "lq"

// createScaleObjects creates the ClusterQueues, then the Namespaces, then a
// LocalQueue in each and the Deployments spread over them, with a client allowed
// a high rate. Objects that exist already count as created.
func createScaleObjects(ctx context.Context, cfg *rest.Config, want scaleCounts) (scaleCounts, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := client.New(cfg, client.Options{Scheme: guardserver.Scheme()})
	if err != nil {
		return scaleCounts{}, err
	}
	var got scaleCounts
	steps := []struct {
		n      int
		into   *int
		object func(i int) client.Object
	}{
		{want.ClusterQueues, &got.ClusterQueues, scaleClusterQueueObject},
		{want.Namespaces, &got.Namespaces, func(i int) client.Object {
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace(i),
				Labels: map[string]string{"team": fmt.Sprintf("team-%d", i%100)}}}
		}},
		{min(want.LocalQueues, want.Namespaces), &got.LocalQueues, func(i int) client.Object {
			return &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: scaleNamespace(i), Name: scaleLocalQueue},
				Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(scaleClusterQueue(i % max(1, want.ClusterQueues)))}}
		}},
		{want.Deployments, &got.Deployments, func(i int) client.Object {
			ns := scaleNamespace(i * max(1, want.Namespaces) / max(1, want.Deployments))
			return fixtures.Deployment(ns, fmt.Sprintf("web-%04d", i)).Requests("cpu", "100m").Obj()
		}},
	}
	for _, s := range steps {
		n, err := parallel(ctx, s.n, func(ctx context.Context, i int) error {
			err := c.Create(ctx, s.object(i))
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		*s.into = n
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// scaleClusterQueueObject is a ClusterQueue with CPU and memory quota.
func scaleClusterQueueObject(i int) client.Object {
	return &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: scaleClusterQueue(i)}, Spec: kueue.ClusterQueueSpec{
		CohortName:        kueue.CohortReference(fmt.Sprintf("scale-cohort-%d", i%10)),
		NamespaceSelector: &metav1.LabelSelector{},
		ResourceGroups: []kueue.ResourceGroup{{
			CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
			Flavors: []kueue.FlavorQuotas{{Name: "default-flavor", Resources: []kueue.ResourceQuota{
				{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("64")},
				{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("256Gi")},
			}}},
		}},
	}}
}

// parallel calls do for 0..n-1 from scaleWorkers goroutines and returns how many
// succeeded; it stops at the first error.
func parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, done atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return int(done.Load()), first
}

// sampleRSS samples a process's VmRSS once a second over rssWindow and returns
// the largest, and its VmHWM at the end.
func sampleRSS(ctx context.Context, pid int) (rss, hwm uint64, err error) {
	end := time.Now().Add(rssWindow)
	for {
		m, err := readMemory(pid)
		if err != nil {
			return 0, 0, err
		}
		rss, hwm = max(rss, m.RSS), m.HWM
		if time.Now().After(end) {
			return rss, hwm, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
