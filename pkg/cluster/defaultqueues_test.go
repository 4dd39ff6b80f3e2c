package cluster

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Kueue's default LocalQueues, remembered", func() {
	lq := func(ns, name string) *kueue.LocalQueue {
		return &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	type event struct {
		deleted, leaving bool
		obj              any
	}
	DescribeTable("follow the LocalQueue informer",
		func(events []event, want map[string]bool) {
			d := &defaultQueues{}
			for _, e := range events {
				h := d.handler(func() bool { return e.leaving }).(toolscache.ResourceEventHandlerFuncs)
				if e.deleted {
					h.DeleteFunc(e.obj)
				} else {
					h.AddFunc(e.obj)
				}
			}
			for ns, has := range want {
				Expect(d.has(ns)).To(Equal(has), ns)
			}
		},
		Entry("a default LocalQueue is remembered; others are not", []event{{obj: lq("a", "default")}, {obj: lq("b", "gpu")}},
			map[string]bool{"a": true, "b": false}),
		Entry("one an admin deletes is forgotten", []event{{obj: lq("a", "default")}, {deleted: true, obj: lq("a", "default")}},
			map[string]bool{"a": false}),
		Entry("one deleted with Kueue's API is kept", []event{{obj: lq("a", "default")}, {deleted: true, leaving: true, obj: lq("a", "default")}},
			map[string]bool{"a": true}),
		Entry("a tombstone counts as a deletion", []event{{obj: lq("a", "default")},
			{deleted: true, obj: toolscache.DeletedFinalStateUnknown{Key: "a/default", Obj: lq("a", "default")}}},
			map[string]bool{"a": false}),
		Entry("an object of another type is ignored", []event{{obj: "not an object"}}, map[string]bool{"": false}),
	)
})

var _ = Describe("whether Kueue's LocalQueue API is leaving", func() {
	type state int
	const (
		gone state = iota
		serving
		deleting
	)
	reader := func(st state) client.Reader {
		scheme := runtime.NewScheme()
		Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
		b := fake.NewClientBuilder().WithScheme(scheme)
		if st == gone {
			return b.Build()
		}
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: localQueueCRD},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: kueue.SchemeGroupVersion.Group,
				Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "LocalQueue"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: kueue.SchemeGroupVersion.Version, Served: true}}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
		}
		if st == deleting {
			crd.Finalizers = []string{"customresourcecleanup.apiextensions.k8s.io"}
			crd.DeletionTimestamp = new(metav1.Now())
		}
		return b.WithObjects(crd).Build()
	}
	DescribeTable("the cache first, then the API server where the cache says staying",
		func(cached, live state, want bool) {
			Expect(crdLeaving(reader(cached), reader(live))).To(Equal(want))
		},
		Entry("serving in both: an admin deleted the queue", serving, serving, false),
		Entry("the cache has not seen the deletion the API server has", serving, deleting, true),
		Entry("the cache has not seen the CRD go", serving, gone, true),
		Entry("the cache saw it leave", deleting, serving, true),
		Entry("gone from the cache", gone, serving, true),
	)
})
