package live_test

import (
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kueue-guard/kueue-guard/pkg/live"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = DescribeTable("Describe names a listing",
	func(gvr schema.GroupVersionResource, namespace, want string) {
		Expect(cmp.Diff(want, live.Describe(gvr, namespace))).To(BeEmpty())
	},
	Entry("core, all namespaces", schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", "pods"),
	Entry("a group", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "", "deployments.apps"),
	Entry("one namespace", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "kueue-system",
		"configmaps in kueue-system"),
)

var _ = DescribeTable("WithClientRate sets what the configuration leaves unset, and only that",
	func(in rest.Config, qps float32, burst int, timeout time.Duration) {
		out := live.WithClientRate(&in)
		Expect(cmp.Diff([]any{qps, burst, timeout}, []any{out.QPS, out.Burst, out.Timeout})).To(BeEmpty())
	},
	Entry("nothing set", rest.Config{}, float32(live.ClientQPS), live.ClientBurst, live.RequestTimeout),
	Entry("the user's rate and timeout kept", rest.Config{QPS: 5, Burst: 7, Timeout: time.Second}, float32(5), 7, time.Second),
)
