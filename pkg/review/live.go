package review

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// listTimeout bounds the live listing: a review in CI must not hang on an
// unreachable cluster.
const listTimeout = time.Minute

// ListCluster reads the state of a live cluster with one read-only listing of
// each kind the review needs (the same kinds the server's informer cache holds,
// plus ResourceFlavors and WorkloadPriorityClasses for explanations), through
// the live package's reader and its policy: a cluster without Kueue's CRDs has
// no queues, which is a note, not an error, and anything it cannot read
// (unreachable, forbidden) is an error: a review against half a cluster would
// claim queues are missing when they are not.
func ListCluster(ctx context.Context, cfg *rest.Config, kueueNamespace string) (*State, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	r, err := live.New(cfg)
	if err != nil {
		return nil, err
	}
	s := NewState(kueueNamespace)
	s.Source, s.Where = StateLive, r.Host

	core := corev1.SchemeGroupVersion
	// LimitRanges and RuntimeClasses: Kueue adjusts requests by them before it
	// charges quota.
	for _, err := range []error{
		add[corev1.Namespace](ctx, r, s, core.WithKind("Namespace"), ""),
		add[corev1.ConfigMap](ctx, r, s, core.WithKind("ConfigMap"), kueueNamespace),
		add[corev1.LimitRange](ctx, r, s, core.WithKind("LimitRange"), ""),
		add[nodev1.RuntimeClass](ctx, r, s, nodev1.SchemeGroupVersion.WithKind("RuntimeClass"), ""),
		addUnstructured(ctx, r, s, appsv1.SchemeGroupVersion.WithKind("Deployment")),
	} {
		if err != nil {
			return nil, err
		}
	}
	// Claim templates and device classes, where resource.k8s.io/v1 is served:
	// Kueue charges the devices they claim or back. Training runtimes, where
	// Kubeflow Trainer is installed.
	optional := []error{
		add[resourcev1.ResourceClaimTemplate](ctx, r, s, resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate"), ""),
		add[resourcev1.DeviceClass](ctx, r, s, resourcev1.SchemeGroupVersion.WithKind("DeviceClass"), ""),
	}
	for _, gvk := range workload.TrainingRuntimeGVKs {
		optional = append(optional, addUnstructured(ctx, r, s, gvk))
	}
	for _, err := range optional {
		if err != nil && !errors.Is(err, live.ErrNotServed) {
			return nil, err
		}
	}
	if err := listKueue(ctx, r, s); err != nil {
		return nil, err
	}
	return s, nil
}

// listKueue reads the Kueue objects; a cluster that serves none of them has
// no Kueue, which the state notes.
func listKueue(ctx context.Context, r *live.Reader, s *State) error {
	gv := kueue.SchemeGroupVersion
	var missing []string
	for _, k := range []struct {
		kind string
		err  error
	}{
		{"LocalQueue", add[kueue.LocalQueue](ctx, r, s, gv.WithKind("LocalQueue"), "")},
		{"ClusterQueue", add[kueue.ClusterQueue](ctx, r, s, gv.WithKind("ClusterQueue"), "")},
		{"ResourceFlavor", add[kueue.ResourceFlavor](ctx, r, s, gv.WithKind("ResourceFlavor"), "")},
		{"WorkloadPriorityClass", add[kueue.WorkloadPriorityClass](ctx, r, s, gv.WithKind("WorkloadPriorityClass"), "")},
		{"Cohort", add[kueue.Cohort](ctx, r, s, gv.WithKind("Cohort"), "")},
	} {
		kind, err := k.kind, k.err
		switch {
		case errors.Is(err, live.ErrNotServed):
			missing = append(missing, kind)
		case err != nil:
			return err
		}
	}
	if len(missing) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("the cluster does not serve %s/v1beta2 %s: Kueue is not installed there, so no queue exists",
			kueueGroup, strings.Join(missing, ", ")))
	}
	return nil
}

// add lists one kind as typed objects into the state: its snapshot, and its
// flavors and priority classes, which explanations read.
func add[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, r *live.Reader, s *State, gvk schema.GroupVersionKind, namespace string) error {
	objs, err := live.ListAs[T, PT](ctx, r, gvk, live.Options{Namespace: namespace})
	if err != nil {
		return err
	}
	for _, o := range objs {
		switch o := any(o).(type) {
		case *kueue.ResourceFlavor:
			s.flavors[o.Name] = o
		case *kueue.WorkloadPriorityClass:
			s.priorityClasses[o.Name] = o
			continue // not part of the snapshot
		}
		if err := s.Snapshot.Add(o); err != nil {
			return err
		}
	}
	return nil
}

// addUnstructured lists one kind the snapshot holds as unstructured.
func addUnstructured(ctx context.Context, r *live.Reader, s *State, gvk schema.GroupVersionKind) error {
	gvr, err := r.Resource(gvk)
	if err != nil {
		return err
	}
	objs, err := r.List(ctx, gvr, live.Options{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		o.SetGroupVersionKind(gvk)
		if err := s.Snapshot.Add(o); err != nil {
			return err
		}
	}
	return nil
}
