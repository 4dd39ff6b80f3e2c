package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
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
