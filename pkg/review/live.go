package review

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// listTimeout bounds the live listing: a review in CI must not hang on an
// unreachable cluster.
const listTimeout = time.Minute

// stateScheme holds the types the live listing reads.
func stateScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	return s
}

// ListCluster reads the state of a live cluster with one read-only listing of
// each kind the review needs (the same kinds the server's informer cache holds,
// plus ResourceFlavors and WorkloadPriorityClasses for explanations). A cluster
// without Kueue's CRDs has no queues: that is a note, not an error. Anything else
// the listing cannot read (unreachable, forbidden) is an error: a review against
// half a cluster would claim queues are missing when they are not.
func ListCluster(ctx context.Context, cfg *rest.Config, kueueNamespace string) (*State, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	c, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: stateScheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	s := NewState(kueueNamespace)
	s.Source, s.Where = StateLive, cfg.Host

	// LimitRanges and RuntimeClasses: Kueue adjusts requests by them before it
	// charges quota.
	for _, l := range []struct {
		what string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"Namespaces", &corev1.NamespaceList{}, nil},
		{"ConfigMaps in " + kueueNamespace, &corev1.ConfigMapList{}, []client.ListOption{client.InNamespace(kueueNamespace)}},
		{"LimitRanges", &corev1.LimitRangeList{}, nil},
		{"RuntimeClasses", &nodev1.RuntimeClassList{}, nil},
	} {
		if err := c.List(ctx, l.list, l.opts...); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
		if err := s.addListed(l.list); err != nil {
			return nil, err
		}
	}
	deployments := &unstructured.UnstructuredList{}
	deployments.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	if err := c.List(ctx, deployments); err != nil {
		return nil, fmt.Errorf("listing Deployments: %w", err)
	}
	for i := range deployments.Items {
		d := &deployments.Items[i]
		d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		if err := s.Snapshot.Add(d); err != nil {
			return nil, err
		}
	}

	// Claim templates and device classes, where resource.k8s.io/v1 is
	// served: Kueue charges the devices they claim or back.
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"ResourceClaimTemplates", &resourcev1.ResourceClaimTemplateList{}}, {"DeviceClasses", &resourcev1.DeviceClassList{}}} {
		if err := c.List(ctx, l.list); err != nil && !meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
		if err := s.addListed(l.list); err != nil {
			return nil, err
		}
	}

	// Training runtimes, where Kubeflow Trainer is installed.
	for _, gvk := range workload.TrainingRuntimeGVKs {
		runtimes := &unstructured.UnstructuredList{}
		runtimes.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := c.List(ctx, runtimes)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", gvk.Kind, err)
		}
		for i := range runtimes.Items {
			rt := &runtimes.Items[i]
			rt.SetGroupVersionKind(gvk)
			if err := s.Snapshot.Add(rt); err != nil {
				return nil, err
			}
		}
	}

	var missingCRDs []string
	listKueue := func(kind string, list client.ObjectList) error {
		err := c.List(ctx, list)
		switch {
		case err == nil:
		case meta.IsNoMatchError(err):
			missingCRDs = append(missingCRDs, kind)
		default:
			return fmt.Errorf("listing %ss: %w", kind, err)
		}
		return nil
	}
	var lqs kueue.LocalQueueList
	var cqs kueue.ClusterQueueList
	var rfs kueue.ResourceFlavorList
	var pcs kueue.WorkloadPriorityClassList
	var cohorts kueue.CohortList
	for _, l := range []struct {
		kind string
		list client.ObjectList
	}{{"LocalQueue", &lqs}, {"ClusterQueue", &cqs}, {"ResourceFlavor", &rfs}, {"WorkloadPriorityClass", &pcs}, {"Cohort", &cohorts}} {
		if err := listKueue(l.kind, l.list); err != nil {
			return nil, err
		}
	}
	for _, l := range []client.ObjectList{&lqs, &cqs, &rfs, &cohorts} {
		if err := s.addListed(l); err != nil {
			return nil, err
		}
	}
	for i := range rfs.Items {
		s.flavors[rfs.Items[i].Name] = &rfs.Items[i]
	}
	for i := range pcs.Items {
		s.priorityClasses[pcs.Items[i].Name] = &pcs.Items[i]
	}
	if len(missingCRDs) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("the cluster does not serve %s/v1beta2 %s: Kueue is not installed there, so no queue exists",
			kueueGroup, strings.Join(missingCRDs, ", ")))
	}
	return s, nil
}

// addListed puts every item of a typed list into the snapshot.
func (s *State) addListed(list client.ObjectList) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, it := range items {
		obj, ok := it.(client.Object)
		if !ok {
			return fmt.Errorf("listed %T is not an object", it)
		}
		if err := s.Snapshot.Add(obj); err != nil {
			return err
		}
	}
	return nil
}
