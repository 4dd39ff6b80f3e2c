package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	kfmpi "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	sparkv1beta2 "github.com/kubeflow/spark-operator/v2/api/v1beta2"
	kftrainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	ginkgo "github.com/onsi/ginkgo/v2"
	awv1beta2 "github.com/project-codeflare/appwrapper/api/v1beta2"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	leaderworkersetv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/randfill"

	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/gomega"
)

// Every kind's summary and Kueue unit are the same whether its object is
// converted by fromUnstructured or by apimachinery's converter: the outcome,
// not only the typed value (FuzzFromUnstructured compares those).
var _ = ginkgo.Describe("fromUnstructured", func() {
	// Both convert every field: decodedForQuota's specs prove that the
	// fields a slim conversion skips change no summary.
	ginkgo.BeforeEach(func() { slimContainers = false })
	ginkgo.AfterEach(func() { viaAPIMachinery, slimContainers = false, true })
	objects := []*unstructured.Unstructured{
		withUnreadFields(fixtures.TrainingJobSet("ml", "train").Obj()),
		fixtures.TrainingJobSet("ml", "stored").AsStored().Obj(),
	}
	for _, o := range fixtures.EveryKind("ml") {
		objects = append(objects, o.Obj(), withUnreadFields(o.Obj()))
	}
	for i, obj := range objects {
		ginkgo.It(fmt.Sprintf("summarizes a %s as apimachinery's converter does (%d)", obj.GetKind(), i), func(ctx context.Context) {
			viaAPIMachinery = true
			want := outcomeOf(ctx, obj)
			viaAPIMachinery = false
			got := outcomeOf(ctx, obj)
			sameError(got.summaryErr, want.summaryErr)
			Expect(reflect.DeepEqual(got.summary, want.summary)).To(BeTrue(), "summaries differ")
			sameError(got.unitErr, want.unitErr)
			Expect(reflect.DeepEqual(got.unit, want.unit)).To(BeTrue(), "Kueue units differ")
		})
	}

	ginkgo.DescribeTable("converts scalars and special forms as apimachinery does",
		func(field string, v any) {
			u := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "m", field: v}}}}}}
			sameConversion(u, func() any { return new(batchv1.Job) })
		},
		ginkgo.Entry("a quantity with spaces", "resources", map[string]any{"requests": map[string]any{"cpu": " 1 "}}),
		ginkgo.Entry("a quantity with a newline", "resources", map[string]any{"requests": map[string]any{"cpu": "1\n"}}),
		ginkgo.Entry("a quantity as a number", "resources", map[string]any{"limits": map[string]any{"cpu": int64(2), "memory": 1.5}}),
		ginkgo.Entry("an invalid quantity", "resources", map[string]any{"requests": map[string]any{"cpu": "1abc"}}),
		ginkgo.Entry("a null quantity", "resources", map[string]any{"requests": map[string]any{"cpu": nil}}),
		ginkgo.Entry("a whole float as an integer", "ports", []any{map[string]any{"containerPort": float64(80)}}),
		ginkgo.Entry("a fraction as an integer", "ports", []any{map[string]any{"containerPort": 80.5}}),
		ginkgo.Entry("a string as an integer", "ports", []any{map[string]any{"containerPort": "80"}}),
		ginkgo.Entry("a number as a string", "image", int64(3)),
		ginkgo.Entry("a list as a struct", "resources", []any{}),
		ginkgo.Entry("a struct as a list", "ports", map[string]any{}),
		ginkgo.Entry("an int-or-string", "livenessProbe", map[string]any{"httpGet": map[string]any{"port": "http"}}),
	)

	ginkgo.It("fails rather than panics where apimachinery's would, and reads no key \"-\"", func() {
		type hidden struct{ Secret string }
		type odd struct {
			hidden
			Printer fmt.Stringer `json:"printer"`
			Skipped string       `json:"-"`
			Name    string       `json:"name"`
		}
		var o odd
		Expect(fromUnstructured(map[string]any{"printer": "text"}, &o)).To(MatchError(ContainSubstring("cannot convert string")))
		Expect(fromUnstructured(map[string]any{"-": "x", "Secret": "y", "name": "n"}, &o)).To(Succeed())
		Expect(o).To(Equal(odd{Name: "n"}))
	})

	ginkgo.It("converts string maps with nulls and numbers as apimachinery does", func() {
		for _, labels := range []map[string]any{{"a": "b", "c": nil}, {"a": int64(1)}, {}} {
			sameConversion(map[string]any{"metadata": map[string]any{"labels": labels}}, func() any { return new(batchv1.Job) })
		}
	})
})

// sameConversion converts u with both converters into fresh values made by
// newObj: both fail, or both give the same value.
func sameConversion(u map[string]any, newObj func() any) {
	ginkgo.GinkgoHelper()
	want, got := newObj(), newObj()
	wantErr := runtime.DefaultUnstructuredConverter.FromUnstructured(u, want)
	err := fromUnstructured(u, got)
	Expect(err != nil).To(Equal(wantErr != nil), "errors: ours %v, apimachinery's %v", err, wantErr)
	if err == nil {
		Expect(reflect.DeepEqual(got, want)).To(BeTrue(), "values differ:\n%#v\n%#v", got, want)
	}
}

// convertTargets are the types the summary converts objects into.
var convertTargets = []func() any{
	func() any { return new(batchv1.Job) }, func() any { return new(batchv1.CronJob) },
	func() any { return new(corev1.Pod) }, func() any { return new(appsv1.Deployment) },
	func() any { return new(appsv1.StatefulSet) }, func() any { return new(leaderworkersetv1.LeaderWorkerSet) },
	func() any { return new(jobsetapi.JobSet) }, func() any { return new(rayv1.RayCluster) },
	func() any { return new(rayv1.RayJob) }, func() any { return new(rayv1.RayService) },
	func() any { return new(kfmpi.MPIJob) }, func() any { return new(kftraining.PyTorchJob) },
	func() any { return new(kftraining.TFJob) }, func() any { return new(kftraining.XGBoostJob) },
	func() any { return new(kftraining.PaddleJob) }, func() any { return new(kftraining.JAXJob) },
	func() any { return new(kftrainer.TrainJob) }, func() any { return new(kftrainer.TrainingRuntime) },
	func() any { return new(awv1beta2.AppWrapper) }, func() any { return new(sparkv1beta2.SparkApplication) },
}

// FuzzFromUnstructured fills a random object of a converted type, turns it
// into its unstructured form, changes some of its values to other JSON types
// (as a user's YAML may), and converts it back with both converters.
func FuzzFromUnstructured(f *testing.F) {
	for i := range convertTargets {
		f.Add(int64(i), uint8(i), uint64(0))
		f.Add(int64(i)*7919, uint8(i), uint64(0x9e3779b97f4a7c15))
	}
	f.Fuzz(func(t *testing.T, seed int64, target uint8, changes uint64) {
		newObj := convertTargets[int(target)%len(convertTargets)]
		obj := newObj()
		fillers(seed).Fill(obj)
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Skip(err)
		}
		retype(u, rand.New(rand.NewPCG(changes, uint64(seed))))
		want, got := newObj(), newObj()
		wantErr := runtime.DefaultUnstructuredConverter.FromUnstructured(u, want)
		if err := fromUnstructured(u, got); (err != nil) != (wantErr != nil) {
			t.Fatalf("errors: ours %v, apimachinery's %v", err, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("values differ:\n%#v\n%#v", got, want)
		}
	})
}

// fillers fill random objects with values of the forms the API server keeps.
func fillers(seed int64) *randfill.Filler {
	quantities := []string{"0", "1", "250m", "1.5Gi", "100n", "2e3", "-1", "7Ki"}
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 2).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantities[c.Intn(len(quantities))])
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.Unix(c.Int63n(1<<31), 0)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(fmt.Sprintf(`{"kind":"Job","n":%d}`, c.Intn(100)))
		},
		func(m *metav1.ManagedFieldsEntry, c randfill.Continue) {},
		func(v *metav1.FieldsV1, c randfill.Continue) {},
	)
}

// retype replaces about one value in eight with a value of another JSON type.
func retype(v any, r *rand.Rand) {
	others := []any{nil, "7", int64(3), 2.5, float64(4), true, map[string]any{}, []any{}}
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if r.IntN(8) == 0 {
				v[k] = runtime.DeepCopyJSONValue(others[r.IntN(len(others))])
				continue
			}
			retype(child, r)
		}
	case []any:
		for i, child := range v {
			if r.IntN(8) == 0 {
				v[i] = runtime.DeepCopyJSONValue(others[r.IntN(len(others))])
				continue
			}
			retype(child, r)
		}
	}
}
