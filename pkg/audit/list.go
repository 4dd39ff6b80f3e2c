// Package audit judges the workloads a cluster already runs with the admission
// pipeline, as if each were created now: `kueue-guard audit` (one shot, printed
// with the reviewer's renderers) lists them from a live cluster.
package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// PageSize is how many objects one list call returns: the audit reads the
// cluster page by page, straight from the API server, never holding a cache of
// every Pod.
const PageSize = 100

// ListOptions choose what is listed.
type ListOptions struct {
	// Config gives the namespaces the webhooks never judge (config.IsExempt).
	Config *config.Configuration
	// OwnNamespace is kueue-guard's own namespace, exempt too.
	OwnNamespace string
	// Namespace limits the listing to one namespace; "" lists all.
	Namespace string
	// Limit stops the listing after this many workloads (0: no limit); the
	// result says it was cut.
	Limit int
	// Each, when set, is handed every workload as it is read, in the
	// listing's order, instead of Listing.Workloads holding them: a page's
	// objects are garbage once judged. An error stops the listing.
	Each func(*unstructured.Unstructured) error
	// Pace, when set, is told how long each page took to read, and may wait
	// before the next one.
	Pace func(ctx context.Context, took time.Duration) error
}

// Listing is what List found.
type Listing struct {
	// Workloads are the top-level workloads, by kind (owners first, see
	// listRank), then namespace and name; empty with ListOptions.Each.
	Workloads []*unstructured.Unstructured
	// Count is how many workloads were listed.
	Count int
	// Kinds are the catalog kinds the cluster serves, which were listed;
	// NotServed the others.
	Kinds, NotServed []schema.GroupVersionKind
	// Children is how many objects were left out as part of another listed
	// workload (a Job's pods, a JobSet's Jobs): they are judged as it.
	Children int
	// Truncated says Limit was reached.
	Truncated bool
}

// Lister lists a cluster's workloads: made once, it lists on every run.
type Lister struct {
	discovery discovery.DiscoveryInterface
	dynamic   dynamic.Interface
}

// NewLister makes the clients the listing reads with.
func NewLister(cfg *rest.Config) (*Lister, error) {
	// serve's configuration sets no rate: a run is a few dozen requests, one
	// after the other.
	cfg = review.WithClientRate(cfg)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Lister{discovery: dc, dynamic: dyn}, nil
}

// List is NewLister(cfg).List(ctx, o), for a one-shot audit.
func List(ctx context.Context, cfg *rest.Config, o ListOptions) (*Listing, error) {
	l, err := NewLister(cfg)
	if err != nil {
		return nil, err
	}
	return l.List(ctx, o)
}

// listRank orders the kinds so that an owner is listed before the kinds it
// creates (a TrainJob before its JobSet, before its Jobs, before their Pods):
// a child is then recognized, and dropped, as it is read. A kind not named
// here is in rank 1. A child met before its owner (an unexpected pair) is
// judged by itself: the order can cost a finding, never hide a workload.
var listRank = map[schema.GroupKind]int{
	{Group: "trainer.kubeflow.org", Kind: "TrainJob"}:            0,
	{Group: "workload.codeflare.dev", Kind: "AppWrapper"}:        0,
	{Group: "ray.io", Kind: "RayJob"}:                            0,
	{Group: "ray.io", Kind: "RayService"}:                        0,
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: 0,
	{Group: "batch", Kind: "Job"}:                                2,
	{Group: "", Kind: "Pod"}:                                     3,
}

// listOrder is the catalog in listRank order (catalog order within a rank).
func listOrder() []*integrations.Integration {
	out := slices.Clone(integrations.All())
	rank := func(in *integrations.Integration) int {
		if r, ok := listRank[in.GVK.GroupKind()]; ok {
			return r
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b *integrations.Integration) int { return rank(a) - rank(b) })
	return out
}

// List lists every top-level workload of every catalog kind the cluster
// serves, in the namespaces the webhooks judge. An object whose controller
// owner is a listed workload of a kind Kueue manages as a whole is part of it,
// as Kueue counts it, and is left out; an owner reference to an object that
// does not exist, or to one of the same kind (a Job "owning" a Job, a trick the
// admission guard refuses), does not hide an object. Only the workloads kept
// (at most Limit) are held, and the identities of what was read.
func (l *Lister) List(ctx context.Context, o ListOptions) (*Listing, error) {
	out := &Listing{}
	uids := map[types.UID]schema.GroupKind{}
	serves, err := servedKinds(l.discovery)
	if err != nil {
		return nil, err
	}
	for _, in := range listOrder() {
		if out.Truncated {
			break
		}
		served, err := serves(in)
		if err != nil {
			return nil, err
		}
		if !served {
			out.NotServed = append(out.NotServed, in.GVK)
			continue
		}
		out.Kinds = append(out.Kinds, in.GVK)
		gvr := in.GVK.GroupVersion().WithResource(in.Resource)
		var eachErr error
		err = listPages(ctx, l.dynamic.Resource(gvr).Namespace(o.Namespace), func(u *unstructured.Unstructured) bool {
			if o.Config.IsExempt(u.GetNamespace(), o.OwnNamespace) {
				return true
			}
			u.SetGroupVersionKind(in.GVK)
			uids[u.GetUID()] = in.GVK.GroupKind()
			if partOf(u, uids) {
				out.Children++
				return true
			}
			if o.Limit > 0 && out.Count == o.Limit {
				out.Truncated = true
				return false
			}
			out.Count++
			if o.Each != nil {
				if eachErr = o.Each(u); eachErr != nil {
					return false
				}
				return true
			}
			out.Workloads = append(out.Workloads, u)
			return true
		}, o.Pace)
		if eachErr != nil {
			return nil, eachErr
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
	}
	return out, nil
}

// partOf reports whether obj's controller owner is a listed workload Kueue
// manages as a whole, of another kind.
func partOf(obj *unstructured.Unstructured, listed map[types.UID]schema.GroupKind) bool {
	if !trust.ManagedOwner(obj) {
		return false
	}
	owner := metav1.GetControllerOfNoCopy(obj)
	if owner == nil {
		return false
	}
	gk, ok := listed[owner.UID]
	return ok && gk != obj.GroupVersionKind().GroupKind() &&
		gk == integrations.ParseGroupKind(owner.APIVersion, owner.Kind)
}

// servedKinds asks discovery once which resources the cluster serves, and
// answers for each catalog kind whether it is served at its version, with
// list. A group the cluster does not have is not an error; one whose discovery
// failed (an aggregated API that is down) is, for the kinds in it.
func servedKinds(dc discovery.DiscoveryInterface) (func(*integrations.Integration) (bool, error), error) {
	_, lists, err := dc.ServerGroupsAndResources()
	failed := map[schema.GroupVersion]error{}
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return nil, fmt.Errorf("discovering the served APIs: %w", err)
		}
		failed = partial.Groups
	}
	served := map[schema.GroupVersion][]metav1.APIResource{}
	for _, l := range lists {
		if gv, err := schema.ParseGroupVersion(l.GroupVersion); err == nil {
			served[gv] = l.APIResources
		}
	}
	return func(in *integrations.Integration) (bool, error) {
		gv := in.GVK.GroupVersion()
		if err, ok := failed[gv]; ok {
			return false, fmt.Errorf("discovering %s: %w", gv, err)
		}
		return slices.ContainsFunc(served[gv], func(r metav1.APIResource) bool {
			return r.Name == in.Resource && slices.Contains(r.Verbs, "list")
		}), nil
	}, nil
}

// listPages lists page by page, calling each for every object until it
// returns false, and pace (when not nil) after reading each page.
func listPages(ctx context.Context, ri dynamic.ResourceInterface, each func(*unstructured.Unstructured) bool,
	pace func(context.Context, time.Duration) error) error {
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		start := time.Now()
		page, err := ri.List(ctx, opts)
		if err != nil {
			return err
		}
		if pace != nil {
			if err := pace(ctx, time.Since(start)); err != nil {
				return err
			}
		}
		for i := range page.Items {
			if !each(&page.Items[i]) {
				return nil
			}
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}
