package audit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/live"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

// The reader every command lists a live cluster with, played against a real
// API server: what it cannot read is an error, never an empty list.
var _ = Describe("the live-cluster reader", Ordered, func() {
	const ns = "reader"
	var reader *live.Reader

	BeforeAll(func() {
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for i := range 7 {
			Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"odd": strconv.FormatBool(i%2 == 1)}}})).To(Succeed())
		}
		var err error
		reader, err = live.New(env.Config)
		Expect(err).NotTo(HaveOccurred())
	})

	It("lists page by page, every object once, in the API server's order, and paces each page", func() {
		var names []string
		pages := 0
		err := reader.Each(ctx, configMaps, live.Options{Namespace: ns, PageSize: 3,
			Pace: func(context.Context, time.Duration) error { pages++; return nil }},
			func(u *unstructured.Unstructured) error { names = append(names, u.GetName()); return nil })
		Expect(err).NotTo(HaveOccurred())
		Expect(names).To(HaveExactElements("cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "cm-5", "cm-6"))
		Expect(pages).To(Equal(3), "7 objects in pages of 3")

		odd, err := live.ListAs[corev1.ConfigMap](ctx, reader, corev1.SchemeGroupVersion.WithKind("ConfigMap"),
			live.Options{Namespace: ns, LabelSelector: "odd=true", PageSize: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(odd).To(HaveLen(3))
		Expect(odd[0].Name).To(Equal("cm-1"))
		Expect(odd[0].Kind).To(Equal("ConfigMap"))
	})

	It("stops where the caller says, and hands back the caller's own error as it is", func() {
		n := 0
		err := reader.Each(ctx, configMaps, live.Options{Namespace: ns, PageSize: 2}, func(*unstructured.Unstructured) error {
			if n++; n == 4 {
				return live.ErrStop
			}
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(4))

		mine := apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, "x")
		err = reader.Each(ctx, configMaps, live.Options{Namespace: ns}, func(*unstructured.Unstructured) error { return mine })
		Expect(err).To(BeIdenticalTo(mine), "not taken for the listing's own not-found")
	})

	It("says a resource the cluster does not serve holds nothing, distinctly from an error", func() {
		gvr := schema.GroupVersionResource{Group: "nowhere.kueue-guard.test", Version: "v1", Resource: "widgets"}
		served, err := reader.Served(gvr)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(BeFalse())
		_, err = reader.List(ctx, gvr, live.Options{})
		Expect(err).To(MatchError(live.ErrNotServed))
		Expect(err).To(MatchError(ContainSubstring("listing widgets.nowhere.kueue-guard.test")))
		_, err = reader.Resource(schema.GroupVersionKind{Group: "nowhere.kueue-guard.test", Version: "v1", Kind: "Widget"})
		Expect(err).To(MatchError(live.ErrNotServed))
	})

	It("refuses to take a forbidden listing for an empty one", func() {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"system:authenticated"}}
		r, err := live.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		objs, err := r.List(ctx, configMaps, live.Options{Namespace: ns})
		Expect(objs).To(BeEmpty())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err).NotTo(MatchError(live.ErrNotServed))
		Expect(err).To(MatchError(ContainSubstring(`listing configmaps in reader: configmaps is forbidden: User "mallory"`)))
	})

	It("fails the kinds of a group whose aggregated API is down, and only those", func() {
		svc := apiService("down.kueue-guard.test")
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(context.Background(), svc))).To(Succeed()) })
		gvr := schema.GroupVersionResource{Group: "down.kueue-guard.test", Version: "v1", Resource: "things"}
		Eventually(func() error {
			reader.Rediscover()
			_, err := reader.Served(gvr)
			return err
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(MatchError(ContainSubstring("discovering down.kueue-guard.test/v1")))
		_, err := reader.List(ctx, gvr, live.Options{})
		Expect(err).To(HaveOccurred())
		Expect(err).NotTo(MatchError(live.ErrNotServed))
		served, err := reader.Served(configMaps)
		Expect(err).NotTo(HaveOccurred(), "the other groups are read")
		Expect(served).To(BeTrue())
	})

	It("takes a CRD removed after discovery for a resource not served", func() {
		crd := widgetCRD()
		Expect(env.Client.Create(ctx, crd)).To(Succeed())
		gvr := schema.GroupVersionResource{Group: "gone.kueue-guard.test", Version: "v1", Resource: "widgets"}
		Eventually(func() (bool, error) {
			reader.Rediscover()
			return reader.Served(gvr)
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(BeTrue())
		Expect(reader.Resource(schema.GroupVersionKind{Group: "gone.kueue-guard.test", Version: "v1", Kind: "Widget"})).
			To(Equal(gvr), "the kind's resource, as discovery names it")
		Expect(env.Client.Delete(ctx, crd)).To(Succeed())
		Eventually(func() error {
			_, err := reader.List(ctx, gvr, live.Options{})
			return err
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(MatchError(live.ErrNotServed))
	})

	It("rides out an API server that fails a page or discovery for a moment", func() {
		cfg, failed := faultyProxy(func(r *http.Request) bool {
			return r.URL.Path == "/api" || (r.URL.Path == "/api/v1/namespaces/"+ns+"/configmaps" && r.URL.Query().Get("continue") != "")
		}, 1)
		r, err := live.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		objs, err := r.List(ctx, configMaps, live.Options{Namespace: ns, PageSize: 3})
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(7), "every object once")
		Expect(failed.Load()).To(BeNumerically("==", 3), "the proxy failed discovery and the two later pages once each")
	})

	It("gives up on an API server that keeps failing with an error naming the listing, and no part of it", func() {
		cfg, _ := faultyProxy(func(r *http.Request) bool {
			return r.URL.Path == "/api/v1/namespaces/"+ns+"/configmaps" && r.URL.Query().Get("continue") != ""
		}, 1000)
		r, err := live.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		objs, err := r.List(ctx, configMaps, live.Options{Namespace: ns, PageSize: 3})
		Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(ContainSubstring("listing configmaps in reader")))
		Expect(objs).To(BeNil(), "not the first page alone")
	})

	It("ends with the caller's error, never an empty page, when the caller's context ends during a request", func() {
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		cfg, _ := faultyProxy(func(r *http.Request) bool {
			if r.URL.Path == "/api/v1/namespaces/"+ns+"/configmaps" {
				stop()
				<-r.Context().Done() // the client gives up on this request
			}
			return false
		}, 0)
		r, err := live.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		objs, err := r.List(lctx, configMaps, live.Options{Namespace: ns})
		Expect(err).To(MatchError(context.Canceled))
		Expect(objs).To(BeNil())
	})

	It("fails fast and names discovery when the API server is unreachable", func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed())
		r, err := live.New(&rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
		Expect(err).NotTo(HaveOccurred())
		_, err = r.List(ctx, configMaps, live.Options{})
		Expect(err).To(MatchError(ContainSubstring("discovering the served APIs")))
		Expect(errors.Is(err, live.ErrNotServed)).To(BeFalse())
	})
})

// apiService registers group/v1 as an aggregated API served by a Service that
// does not exist: its discovery fails, as an aggregated API that is down.
func apiService(group string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1." + group},
		"spec": map[string]any{
			"group": group, "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10),
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": "default", "name": "nowhere", "port": int64(443)},
		},
	}}
}

// widgetCRD is a namespaced Widget kind in gone.kueue-guard.test.
func widgetCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.gone.kueue-guard.test"},
		"spec": map[string]any{
			"group": "gone.kueue-guard.test", "scope": "Namespaced",
			"names": map[string]any{"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
					"x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
}

// faultyProxy serves the API server through a proxy that answers the first n
// tries of each request match selects (by its URL) with 503, as an API server
// restarting or shedding load does; it says how many it failed.
func faultyProxy(match func(*http.Request) bool, n int32) (*rest.Config, *atomic.Int32) {
	GinkgoHelper()
	tr, err := rest.TransportFor(env.Config)
	Expect(err).NotTo(HaveOccurred())
	target, err := url.Parse(env.Config.Host)
	Expect(err).NotTo(HaveOccurred())
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	failed := &atomic.Int32{}
	var mu sync.Mutex
	tries := map[string]int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries[r.URL.String()]++
		fail := match(r) && tries[r.URL.String()] <= n
		mu.Unlock()
		if fail {
			failed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server is restarting",` +
				`"reason":"ServiceUnavailable","code":503}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	DeferCleanup(srv.Close)
	return &rest.Config{Host: srv.URL}, failed
}
