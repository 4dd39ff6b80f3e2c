// Package audit judges the workloads a cluster already runs with the admission
// pipeline, as if each were created now: `kueue-guard audit` (one shot, printed
// with the reviewer's renderers) lists them from a live cluster.
package audit

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// PageSize is how many objects one list call returns: the audit reads the
// cluster page by page, straight from the API server, and keeps nothing of a
// page once judged; a small page holds less of a large cluster at once.
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

// Lister lists a cluster's workloads: made once, it lists on every run, each
// run with the cluster's discovery of the time.
type Lister struct {
	reader *live.Reader
}

// NewLister makes the reader the listing reads with.
func NewLister(cfg *rest.Config) (*Lister, error) {
	r, err := live.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Lister{reader: r}, nil
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
	l.reader.Rediscover()
	for _, in := range listOrder() {
		if out.Truncated {
			break
		}
		gvr := in.GVK.GroupVersion().WithResource(in.Resource)
		served, err := l.reader.Served(gvr)
		if err != nil {
			return nil, err
		}
		if !served {
			out.NotServed = append(out.NotServed, in.GVK)
			continue
		}
		out.Kinds = append(out.Kinds, in.GVK)
		err = l.reader.Each(ctx, gvr, live.Options{Namespace: o.Namespace, PageSize: PageSize, Pace: o.Pace},
			func(u *unstructured.Unstructured) error {
				if o.Config.IsExempt(u.GetNamespace(), o.OwnNamespace) {
					return nil
				}
				u.SetGroupVersionKind(in.GVK)
				uids[u.GetUID()] = in.GVK.GroupKind()
				if partOf(u, uids) {
					out.Children++
					return nil
				}
				if o.Limit > 0 && out.Count == o.Limit {
					out.Truncated = true
					return live.ErrStop
				}
				out.Count++
				if o.Each != nil {
					return o.Each(u)
				}
				out.Workloads = append(out.Workloads, u)
				return nil
			})
		if err != nil {
			return nil, err
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
