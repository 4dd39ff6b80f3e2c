package workload

import (
	"context"

	ginkgo "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/dra"

	. "github.com/onsi/gomega"
)

// classesOnly are a cluster's DeviceClasses, without claim templates.
type classesOnly []resourcev1.DeviceClass

func (classesOnly) ResourceClaimTemplate(string, string) (*resourcev1.ResourceClaimTemplate, bool) {
	return nil, false
}

func (c classesOnly) DeviceClasses() []resourcev1.DeviceClass { return c }

func deviceClass(name, extended string) resourcev1.DeviceClass {
	dc := resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if extended != "" {
		dc.Spec.ExtendedResourceName = &extended
	}
	return dc
}

// Kueue's ResolveExtendedResourceQuota is what requestsBacked stands in
// front of: wherever it says no request is backed, Kueue's own code must
// replace nothing and report nothing, and wherever it says one is, Kueue's
// code must act on it.
var _ = ginkgo.DescribeTable("requestsBacked says what Kueue's extended-resource lookup would find",
	func(classes classesOnly, init, main corev1.ResourceList, want bool) {
		podSets := []kueue.PodSet{{Name: "main", Count: 2, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: init}}},
			Containers:     []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: main}}},
		}}}}
		_, backed := requestsBacked(podSets, classes)
		Expect(backed).To(Equal(want))

		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: kueue.WorkloadSpec{PodSets: podSets}}
		_, replaced, errs := dra.ResolveExtendedResourceQuota(context.Background(), kueueReader{dra: classes}, dra.NewResourceMapper(), wl)
		Expect(len(replaced) > 0 || len(errs) > 0).To(Equal(want), "Kueue's own lookup: replaced %v, errors %v", replaced, errs)
	},
	ginkgo.Entry("no DeviceClass", classesOnly{}, nil, corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}, false),
	ginkgo.Entry("classes backing no extended resource", classesOnly{deviceClass("gpu.example.com", "")},
		nil, corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}, false),
	ginkgo.Entry("a class backing another resource", classesOnly{deviceClass("gpu.example.com", "example.com/tpu")},
		nil, corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}, false),
	ginkgo.Entry("only cpu and memory", classesOnly{deviceClass("gpu.example.com", "example.com/gpu")},
		nil, corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")}, false),
	ginkgo.Entry("a backed resource requested as zero", classesOnly{deviceClass("gpu.example.com", "example.com/gpu")},
		nil, corev1.ResourceList{"example.com/gpu": resource.MustParse("0")}, false),
	ginkgo.Entry("a backed resource", classesOnly{deviceClass("gpu.example.com", "example.com/gpu")},
		nil, corev1.ResourceList{"cpu": resource.MustParse("1"), "example.com/gpu": resource.MustParse("2")}, true),
	ginkgo.Entry("a backed resource in an init container", classesOnly{deviceClass("gpu.example.com", "example.com/gpu")},
		corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}, corev1.ResourceList{"cpu": resource.MustParse("1")}, true),
	ginkgo.Entry("a backed resource requested in fractions (Kueue refuses it)", classesOnly{deviceClass("gpu.example.com", "example.com/gpu")},
		nil, corev1.ResourceList{"example.com/gpu": resource.MustParse("500m")}, true),
)
