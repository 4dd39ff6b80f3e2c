package main

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kueue-guard/kueue-guard/pkg/chart"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The chart's container arguments are parsed by the serve command itself: a
// flag the chart passes that serve does not know would crash-loop every pod.
var _ = Describe("serve, as the chart runs it", func() {
	It("accepts every argument the chart passes, with the chart's values", func() {
		kg, err := chart.LoadFromRepo(".")
		Expect(err).NotTo(HaveOccurred())
		objs, err := kg.Render(map[string]any{"server": map[string]any{"policyTimeout": "1500ms", "policyConcurrency": 3, "clientCAConfigMap": "client-ca"}})
		Expect(err).NotTo(HaveOccurred())
		var args []string
		for _, u := range objs {
			if u.GetKind() == "Deployment" {
				d := &appsv1.Deployment{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)).To(Succeed())
				args = d.Spec.Template.Spec.Containers[0].Args
			}
		}
		Expect(args).NotTo(BeEmpty())
		Expect(args[0]).To(Equal("serve"))

		f := &serveFlags{}
		cmd := newServeCommandWith(f)
		Expect(cmd.ParseFlags(args[1:])).To(Succeed())
		Expect(f.policyTimeout).To(Equal(1500 * time.Millisecond))
		Expect(f.policyConcurrency).To(Equal(3))
		Expect(f.maxInFlight).To(Equal(256))
		Expect(f.maxInFlightMiB).To(Equal(8), "the chart passes its default")
		Expect(f.gcHeadroomMiB).To(Equal(64), "the chart passes its default")
		Expect(f.shutdownDelay).To(Equal(5 * time.Second))
		Expect(f.clientCAFile).To(Equal("/etc/kueue-guard/client-ca/ca.crt"))
	})
})
