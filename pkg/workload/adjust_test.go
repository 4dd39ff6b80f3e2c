package workload_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// namespaceResources is a namespace's LimitRanges and the cluster's
// RuntimeClasses, as the server's view or the reviewer's snapshot holds them.
type namespaceResources struct {
	limitRanges    map[string][]corev1.LimitRange
	runtimeClasses map[string]*nodev1.RuntimeClass
}

func (r namespaceResources) LimitRanges(ns string) []corev1.LimitRange { return r.limitRanges[ns] }

func (r namespaceResources) RuntimeClass(name string) (*nodev1.RuntimeClass, bool) {
	rc, ok := r.runtimeClasses[name]
	return rc, ok
}

var _ = Describe("requests adjusted as Kueue adjusts them", func() {
	res := namespaceResources{
		limitRanges: map[string][]corev1.LimitRange{"demo-ns": {{
			ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "demo-ns"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
		}}},
		runtimeClasses: map[string]*nodev1.RuntimeClass{"kata": {ObjectMeta: metav1.ObjectMeta{Name: "kata"},
			Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
	}

	It("gives a container without requests the LimitRange's defaults (and its default limit as the missing request)", func() {
		job := object("batch/v1", "Job", map[string]any{"parallelism": int64(2), "template": tmpl(podSpec(ctr("main", nil, nil)))})
		job.SetNamespace("demo-ns")
		plain, err := workload.Summarize(context.Background(), job)
		Expect(err).NotTo(HaveOccurred())
		Expect(plain.TotalRequests).To(BeEmpty(), "without the namespace's LimitRange it requests nothing")

		sum, err := workload.SummarizeWith(context.Background(), job, workload.Options{Resources: res})
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.PodSets[0].Requests.Cpu().String()).To(Equal("1"))
		Expect(sum.PodSets[0].Requests.Memory().String()).To(Equal("1Gi"))
		Expect(sum.TotalRequests.Cpu().String()).To(Equal("2"))
	})

	It("adds the RuntimeClass's pod overhead", func() {
		spec := podSpec(ctr("main", rl{"cpu": "500m"}, nil))
		spec["runtimeClassName"] = "kata"
		job := object("batch/v1", "Job", map[string]any{"template": tmpl(spec)})
		job.SetNamespace("other-ns")
		sum, err := workload.SummarizeWith(context.Background(), job, workload.Options{Resources: res})
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.PodSets[0].Requests.Cpu().String()).To(Equal("500m"))
		Expect(sum.PodSets[0].Requests.Memory().String()).To(Equal("128Mi"))
	})

	It("leaves a namespace without LimitRanges alone", func() {
		job := object("batch/v1", "Job", map[string]any{"template": tmpl(podSpec(ctr("main", rl{"cpu": "3"}, nil)))})
		job.SetNamespace("other-ns")
		sum, err := workload.SummarizeWith(context.Background(), job, workload.Options{Resources: res})
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.TotalRequests.Cpu().String()).To(Equal("3"))
	})
})

var _ = Describe("Kueue's resources configuration", func() {
	It("drops excluded resources and applies transformations, as Kueue charges them", func() {
		replace := configapi.Replace
		job := object("batch/v1", "Job", map[string]any{"parallelism": int64(2), "template": tmpl(podSpec(
			ctr("main", rl{"cpu": "1", "example.com/scratch": "3", "nvidia.com/mig-1g.5gb": "2"}, nil)))})
		sum, err := workload.SummarizeWith(context.Background(), job, workload.Options{Kueue: configapi.Resources{
			ExcludeResourcePrefixes: []string{"example.com/"},
			Transformations: []configapi.ResourceTransformation{{Input: "nvidia.com/mig-1g.5gb", Strategy: &replace,
				Outputs: corev1.ResourceList{"example.com/accelerator-memory": resource.MustParse("5Gi"), "example.com/credits": resource.MustParse("1")}}},
		}})
		Expect(err).NotTo(HaveOccurred())
		r := sum.PodSets[0].Requests
		Expect(r).To(HaveKey(corev1.ResourceName("example.com/accelerator-memory")), "transformation outputs are charged")
		Expect(r).NotTo(HaveKey(corev1.ResourceName("nvidia.com/mig-1g.5gb")), "a replaced input is not")
		Expect(r).NotTo(HaveKey(corev1.ResourceName("example.com/scratch")), "an excluded resource is not")
		q := r["example.com/accelerator-memory"]
		Expect(q.Value()).To(BeEquivalentTo(10<<30), "5Gi per GPU slice, 2 slices")
		Expect(sum.TotalRequests.Cpu().String()).To(Equal("2"))
	})
})
