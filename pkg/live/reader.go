// Package live is how kueue-guard's commands read a live cluster: `audit` (and
// the server's audit loop), `review --live-cluster`, `preflight` and
// `kueue export|diff|restore` all list through one Reader, with one discovery,
// client-go's pager and one policy for what cannot be read:
//
//   - a resource the cluster does not serve (its group, version or resource is
//     not in discovery, or its CRD went away before the list) holds nothing:
//     Served says false, and Each and List return an error matching
//     ErrNotServed, which a command reports as a fact ("Kueue is not
//     installed") rather than a failure;
//   - anything else that is not read (forbidden, unreachable, a timeout, a
//     group whose discovery failed because its aggregated API is down, a
//     listing cut by an error or an expired continue token) is an error that
//     names the resource, never an empty list: a verdict about half a cluster
//     would claim that what it could not see is not there.
package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
)

// ClientQPS and ClientBurst are the client-side rate limits a Reader lists
// with where the configuration sets none: client-go's default, 5 requests a
// second, makes a listing of a dozen kinds, or discovery and CRD reads, wait
// seconds for no reason. A reader sends one request after the other.
const (
	ClientQPS   = 20
	ClientBurst = 40
)

// RequestTimeout bounds one request where the configuration sets no timeout:
// a command must not hang on an API server that accepted a connection and
// never answers.
const RequestTimeout = 30 * time.Second

// PageSize is how many objects one list call returns unless Options says
// otherwise: client-go's pager default.
const PageSize = 500

// Backoff is how a request that failed for a passing reason (transient) is
// tried again: 5 tries over about 3 s, enough for an API server's restart to
// be ridden out and short enough for a command to fail fast when it is down.
var Backoff = wait.Backoff{Steps: 5, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1}

// transient says a request may succeed if sent again: the API server busy,
// timing out or restarting. What it refuses (forbidden, not found, invalid)
// and what the caller ended (its context) is not tried again.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

// retrying runs fn until it succeeds, fails for good, or Backoff runs out,
// and returns fn's last error. Not retry.OnError: it answers nil when fn's
// error is a context's (wait.Interrupted takes it for the backoff's own), and
// a listing cancelled mid-request became an empty page (test/audit).
func retrying(ctx context.Context, fn func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, Backoff, func(context.Context) (bool, error) {
		last = fn()
		return last == nil || !transient(last), nil
	})
	if last != nil {
		return last
	}
	return err
}

// ErrNotServed matches the error of listing a resource the cluster does not
// serve.
var ErrNotServed = errors.New("not served by the cluster")

// ErrStop, returned by an Each callback, ends the listing without an error.
var ErrStop = errors.New("stop listing")

// WithClientRate is cfg with ClientQPS and ClientBurst when it sets no rate,
// and RequestTimeout when it sets no timeout.
func WithClientRate(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = ClientQPS, ClientBurst
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = RequestTimeout
	}
	return cfg
}

// Reader lists a live cluster. Discovery is read on first use and kept until
// Rediscover: a command's run sees one set of served resources.
type Reader struct {
	// Host is the API server's address.
	Host string
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface

	mu         sync.Mutex
	discovered bool
	discErr    error
	// served are the resources of every group version discovery returned;
	// failed the group versions whose discovery failed.
	served map[schema.GroupVersion][]metav1.APIResource
	failed map[schema.GroupVersion]error
}

// New makes a Reader with cfg, as WithClientRate sets it.
func New(cfg *rest.Config) (*Reader, error) {
	cfg = WithClientRate(cfg)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return &Reader{Host: cfg.Host, dyn: dyn, disc: dc}, nil
}

// Dynamic is the Reader's client, for what is not a listing (a get, an
// apply).
func (r *Reader) Dynamic() dynamic.Interface { return r.dyn }

// Rediscover makes the next listing read discovery again: a long-lived
// Reader (the audit loop's) sees the CRDs installed or removed since.
func (r *Reader) Rediscover() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discovered = false
}

// discover reads every served group version, unless read already. A partial
// answer (some aggregated API down) is kept, with the failed group versions
// remembered.
func (r *Reader) discover() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.discovered {
		return r.discErr
	}
	r.discovered, r.discErr = true, nil
	r.served, r.failed = map[schema.GroupVersion][]metav1.APIResource{}, map[schema.GroupVersion]error{}
	var lists []*metav1.APIResourceList
	err := retrying(context.Background(), func() (err error) {
		_, lists, err = r.disc.ServerGroupsAndResources()
		return err
	})
	// A group whose discovery failed is not tried again (it is no API status):
	// one aggregated API that is down must not slow every run.
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			r.discErr = fmt.Errorf("discovering the served APIs: %w", err)
			return r.discErr
		}
		r.failed = partial.Groups
	}
	for _, l := range lists {
		if gv, err := schema.ParseGroupVersion(l.GroupVersion); err == nil {
			r.served[gv] = l.APIResources
		}
	}
	return nil
}

// Served reports whether the cluster serves gvr with the list verb. A group
// version whose discovery failed is an error, not "not served".
func (r *Reader) Served(gvr schema.GroupVersionResource) (bool, error) {
	if err := r.discover(); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	gv := gvr.GroupVersion()
	if err, ok := r.failed[gv]; ok {
		return false, fmt.Errorf("discovering %s: %w", gvString(gv), err)
	}
	return slices.ContainsFunc(r.served[gv], func(res metav1.APIResource) bool {
		return res.Name == gvr.Resource && slices.Contains(res.Verbs, "list")
	}), nil
}

// Resource is the resource that serves gvk, as discovery names it: no caller
// spells a kind's plural. A kind discovery does not list matches
// ErrNotServed; a group version whose discovery failed is that error.
func (r *Reader) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	if err := r.discover(); err != nil {
		return schema.GroupVersionResource{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	gv := gvk.GroupVersion()
	if err, ok := r.failed[gv]; ok {
		return schema.GroupVersionResource{}, fmt.Errorf("discovering %s: %w", gvString(gv), err)
	}
	for _, res := range r.served[gv] {
		if res.Kind == gvk.Kind && !strings.Contains(res.Name, "/") {
			return gv.WithResource(res.Name), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("listing %s: %w", gvk.Kind+"."+gvString(gv), ErrNotServed)
}

// Get reads one object of gvk, with a listing's retries; one that does not
// exist is an error apierrors.IsNotFound recognizes.
func (r *Reader) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	gvr, err := r.Resource(gvk)
	if err != nil {
		return nil, err
	}
	var u *unstructured.Unstructured
	err = retrying(ctx, func() (err error) {
		u, err = r.dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, namespace, name, err)
	}
	return u, nil
}

// FirstServed is the first of versions at which the cluster serves a group's
// resource.
func (r *Reader) FirstServed(group string, versions []string, resource string) (schema.GroupVersionResource, bool, error) {
	for _, v := range versions {
		gvr := schema.GroupVersionResource{Group: group, Version: v, Resource: resource}
		ok, err := r.Served(gvr)
		if err != nil || ok {
			return gvr, ok, err
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// Options choose what a listing reads.
type Options struct {
	// Namespace limits the listing to one namespace; "" lists all.
	Namespace string
	// LabelSelector limits it to the objects it selects.
	LabelSelector string
	// PageSize is how many objects one list call returns (0: PageSize). A
	// caller that keeps nothing of a page asks for less to hold less.
	PageSize int64
	// Pace, when set, is told how long each list call took, and may wait
	// before the next one; it is called from the pager's goroutine.
	Pace func(ctx context.Context, took time.Duration) error
}

// Each lists gvr page by page with client-go's pager and hands every object to
// fn, in the listing's order, until fn returns an error (ErrStop ends the
// listing with none). The object is the page's: fn keeps it at the cost of
// keeping the page. At most two pages are held: the one fn reads and the next.
func (r *Reader) Each(ctx context.Context, gvr schema.GroupVersionResource, o Options,
	fn func(*unstructured.Unstructured) error) error {
	served, err := r.Served(gvr)
	if err != nil {
		return err
	}
	what := Describe(gvr, o.Namespace)
	if o.LabelSelector != "" {
		what += " labelled " + o.LabelSelector
	}
	if !served {
		return fmt.Errorf("listing %s: %w", what, ErrNotServed)
	}
	ri := r.dyn.Resource(gvr).Namespace(o.Namespace)
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		start := time.Now()
		var list *unstructured.UnstructuredList
		err := retrying(ctx, func() (err error) {
			list, err = ri.List(ctx, opts)
			return err
		})
		if err == nil && o.Pace != nil {
			err = o.Pace(ctx, time.Since(start))
		}
		return list, err
	})
	p.PageSize = cmp.Or(o.PageSize, PageSize)
	p.PageBufferSize = 0
	// fn's own error is returned as it is; only the listing's is explained.
	var fnErr error
	err = p.EachListItem(ctx, metav1.ListOptions{LabelSelector: o.LabelSelector}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("listed %T, not an object", obj)
		}
		fnErr = fn(u)
		return fnErr
	})
	switch {
	case errors.Is(fnErr, ErrStop):
		return nil
	case fnErr != nil:
		return fnErr
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		// The CRD went away after discovery.
		return fmt.Errorf("listing %s: %w", what, ErrNotServed)
	case apierrors.IsResourceExpired(err):
		return fmt.Errorf("listing %s: the listing took longer than the API server keeps its continue token; run it again: %w", what, err)
	}
	return fmt.Errorf("listing %s: %w", what, err)
}

// List is every object Each hands out, or none and the error: never a part
// of the listing.
func (r *Reader) List(ctx context.Context, gvr schema.GroupVersionResource, o Options) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := r.Each(ctx, gvr, o, func(u *unstructured.Unstructured) error {
		out = append(out, u)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListAs is List of the resource that serves gvk (Resource), with every
// object converted to a T (a typed API object, such as corev1.Namespace), its
// kind set from gvk.
func ListAs[T any, PT interface {
	*T
	runtime.Object
}](ctx context.Context, r *Reader, gvk schema.GroupVersionKind, o Options) ([]PT, error) {
	gvr, err := r.Resource(gvk)
	if err != nil {
		return nil, err
	}
	var out []PT
	err = r.Each(ctx, gvr, o, func(u *unstructured.Unstructured) error {
		obj := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return fmt.Errorf("reading %s %s: %w", gvk.Kind, objectName(u), err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		out = append(out, obj)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Describe names a listing: "deployments.apps", "configmaps in kueue-system".
func Describe(gvr schema.GroupVersionResource, namespace string) string {
	s := gvr.Resource
	if gvr.Group != "" {
		s += "." + gvr.Group
	}
	if namespace != "" {
		s += " in " + namespace
	}
	return s
}

func gvString(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return gv.Version
	}
	return gv.String()
}

func objectName(u *unstructured.Unstructured) string {
	return strings.TrimPrefix(u.GetNamespace()+"/"+u.GetName(), "/")
}
