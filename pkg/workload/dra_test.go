package workload_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/kueue/pkg/features"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// claimTemplates holds ResourceClaimTemplates by namespace and name, and one
// DeviceClass, gpu.nvidia.com, backing the extended resource example.com/gpu.
type claimTemplates map[[2]string]*resourcev1.ResourceClaimTemplate

func (c claimTemplates) ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool) {
	t, ok := c[[2]string{namespace, name}]
	return t, ok
}

func (c claimTemplates) DeviceClasses() []resourcev1.DeviceClass {
	return []resourcev1.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: new("example.com/gpu")}}}
}

// unbacked are claimTemplates in a cluster whose DeviceClasses back no
// extended resource.
type unbacked struct{ claimTemplates }

func (unbacked) DeviceClasses() []resourcev1.DeviceClass {
	return []resourcev1.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}}}
}

// claimTemplate claims count devices of class, with CEL selectors when cel is set.
func claimTemplate(name, class string, count int64, cel string) *resourcev1.ResourceClaimTemplate {
	req := &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
	if cel != "" {
		req.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: cel}}}
	}
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: req}}}}}}
}

// claimingJob is a Job of parallelism pods, each with one CPU and a claim: from a
// template (template set) or by name.
func claimingJob(parallelism int64, template, claim string) *unstructured.Unstructured {
	spec := podSpec(ctr("main", rl{"cpu": "1"}, nil))
	ref := map[string]any{"name": "gpus"}
	if template != "" {
		ref["resourceClaimTemplateName"] = template
	} else {
		ref["resourceClaimName"] = claim
	}
	spec["resourceClaims"] = []any{ref}
	return job(parallelism, 0, tmpl(spec))
}

var _ = Describe("devices claimed through DRA, counted with Kueue's code", func() {
	templates := claimTemplates{
		{testNamespace, "two-gpus"}:  claimTemplate("two-gpus", "gpu.nvidia.com", 2, ""),
		{testNamespace, "two-fpgas"}: claimTemplate("two-fpgas", "fpga.example.com", 2, ""),
		{testNamespace, "picky"}:     claimTemplate("picky", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].model == "H100"`),
	}
	mapped := workload.Options{Claims: templates, Kueue: configapi.Resources{DeviceClassMappings: []configapi.DeviceClassMapping{
		{Name: "nvidia.com/gpu", DeviceClassNames: []corev1.ResourceName{"gpu.nvidia.com"}}}}}
	summarize := func(obj *unstructured.Unstructured, o workload.Options) *workload.Summary {
		sum, err := workload.SummarizeWith(context.Background(), obj, o)
		Expect(err).NotTo(HaveOccurred())
		return sum
	}

	It("charges a template's devices per pod, under the name deviceClassMappings gives their class", func() {
		sum := summarize(claimingJob(4, "two-gpus", ""), mapped)
		Expect(sum.ClaimsUncounted).To(BeEmpty())
		Expect(sum.PodSets).To(equalPodSets([]workload.PodSet{ps("main", 4, rl{"cpu": "1", "nvidia.com/gpu": "2"})}))
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").String()).To(Equal("8"))
	})

	DescribeTable("says why Kueue would not count the devices, and counts none",
		func(obj *unstructured.Unstructured, o workload.Options, gateOn bool, reason string) {
			if !gateOn {
				gate := string(features.KueueDRAIntegration)
				Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{gate: false})).To(Succeed())
				DeferCleanup(utilfeature.DefaultMutableFeatureGate.SetFromMap, map[string]bool{gate: true})
			}
			sum := summarize(obj, o)
			Expect(sum.ClaimsUncounted).To(ContainSubstring(reason))
			Expect(sum.TotalRequests).NotTo(HaveKey(BeEquivalentTo("nvidia.com/gpu")))
		},
		Entry("a device class without a mapping", claimingJob(1, "two-fpgas", ""), mapped, true,
			"DeviceClass fpga.example.com is not mapped"),
		Entry("a template not created yet", claimingJob(1, "later", ""), mapped, true,
			"ResourceClaimTemplate team-a/later not found: create it before the workload"),
		Entry("devices chosen by CEL selectors", claimingJob(1, "picky", ""), mapped, true,
			"does not read ResourceSlices"),
		Entry("Kueue's DRA integration off", claimingJob(1, "two-gpus", ""), mapped, false,
			"KueueDRAIntegration feature gate is off"),
		Entry("no templates to read", claimingJob(1, "two-gpus", ""), workload.Options{Kueue: mapped.Kueue}, true,
			"cannot be read here"),
		Entry("a class Kueue charges by ResourceSlice counters", claimingJob(1, "two-gpus", ""), workload.Options{Claims: templates,
			Kueue: configapi.Resources{DeviceClassMappings: []configapi.DeviceClassMapping{{Name: "nvidia.com/gpu",
				DeviceClassNames: []corev1.ResourceName{"gpu.nvidia.com"}, Sources: []configapi.DeviceClassSourceConfig{
					{Counter: &configapi.DeviceClassCounterSource{Name: "memory", Driver: "gpu.nvidia.com"}}}}}}}, true,
			"by the counters or capacity"),
	)

	It("charges an extended resource a DeviceClass backs under its class's mapped name, as Kueue does", func() {
		sum := summarize(job(2, 0, tmpl(podSpec(ctr("main", rl{"cpu": "1", "example.com/gpu": "3"}, nil)))), mapped)
		Expect(sum.ClaimsUncounted).To(BeEmpty())
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").String()).To(Equal("6"))
		Expect(sum.TotalRequests).NotTo(HaveKey(BeEquivalentTo("example.com/gpu")), "replaced by the DRA name")

		plain := summarize(job(2, 0, tmpl(podSpec(ctr("main", rl{"cpu": "1", "other.com/fpga": "3"}, nil)))), mapped)
		Expect(plain.TotalRequests.Name("other.com/fpga", "").String()).To(Equal("6"), "not backed by a DeviceClass: itself")
	})

	It("charges extended resources under their own names when no DeviceClass backs one, templates still counted", func() {
		o := workload.Options{Claims: unbacked{templates}, Kueue: mapped.Kueue}
		spec := podSpec(ctr("main", rl{"cpu": "1", "example.com/gpu": "3"}, nil))
		spec["resourceClaims"] = []any{map[string]any{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}}
		sum := summarize(job(2, 0, tmpl(spec)), o)
		Expect(sum.ClaimsUncounted).To(BeEmpty())
		Expect(sum.TotalRequests.Name("example.com/gpu", "").String()).To(Equal("6"), "not replaced")
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").String()).To(Equal("4"), "the template's devices")

		plain := summarize(job(2, 0, tmpl(podSpec(ctr("main", rl{"cpu": "1", "example.com/gpu": "3"}, nil)))), o)
		Expect(plain.TotalRequests.Name("example.com/gpu", "").String()).To(Equal("6"))
		Expect(plain.TotalRequests.Name("nvidia.com/gpu", "").IsZero()).To(BeTrue())
	})

	It("leaves a claim by name to the policy that refuses it by field", func() {
		sum := summarize(claimingJob(2, "", "shared"), mapped)
		Expect(sum.ClaimsUncounted).To(BeEmpty())
		Expect(sum.TotalRequests.Name("nvidia.com/gpu", "").IsZero()).To(BeTrue())
	})
})
