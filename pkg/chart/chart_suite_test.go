package chart_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/chart"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestChart(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Chart Suite")
}

// kg is the chart under test, loaded once from the repository.
var kg *chart.Chart

var _ = BeforeSuite(func() {
	var err error
	kg, err = chart.LoadFromRepo(".")
	Expect(err).NotTo(HaveOccurred())
})

// values parses a values document written as YAML, the way users write them.
func values(doc string) map[string]any {
	v := map[string]any{}
	Expect(yaml.Unmarshal([]byte(doc), &v)).To(Succeed())
	return v
}

// rendered is one render of the chart, with lookups by kind and name.
type rendered struct {
	objs []*unstructured.Unstructured
}

// render renders the chart with a values document and fails on any error.
func render(doc string) rendered {
	GinkgoHelper()
	objs, err := kg.Render(values(doc))
	Expect(err).NotTo(HaveOccurred())
	return rendered{objs: objs}
}

// all returns the objects of a kind.
func (r rendered) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// get returns the object of kind and name, failing when it is not rendered.
func (r rendered) get(kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, o := range r.all(kind) {
		if o.GetName() == name {
			return o
		}
	}
	Fail("not rendered: " + kind + " " + name)
	return nil
}

// has reports whether an object of kind and name is rendered.
func (r rendered) has(kind, name string) bool {
	for _, o := range r.all(kind) {
		if o.GetName() == name {
			return true
		}
	}
	return false
}

// typed decodes an object strictly into its Go type.
func typed[T runtime.Object](u *unstructured.Unstructured) T {
	GinkgoHelper()
	obj, err := chart.DecodeStrict(u)
	Expect(err).NotTo(HaveOccurred())
	t, ok := obj.(T)
	Expect(ok).To(BeTrue(), "%s decodes to %T", u.GetKind(), obj)
	return t
}

// deployment is the rendered webhook Deployment.
func (r rendered) deployment() *appsv1.Deployment {
	GinkgoHelper()
	return typed[*appsv1.Deployment](r.get("Deployment", "kueue-guard"))
}
