package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/handlers"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func request(op admissionv1.Operation, kind metav1.GroupVersionKind, raw []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid-1", Operation: op, Kind: kind, Namespace: "a", Name: "w",
		Object: runtime.RawExtension{Raw: raw},
	}}
}

var jobKind = metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

var _ = Describe("the workload handlers", func() {
	var (
		view     cluster.View
		pipeline *guard.Pipeline
		metrics  *handlers.Metrics
		seen     []string
	)
	BeforeEach(func() {
		var err error
		view, err = cluster.NewSnapshot(
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{guard.DefaultQueueAnnotation: "q"}}},
			&kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "q"}})
		Expect(err).NotTo(HaveOccurred())
		pipeline, err = guard.Build(config.Default(), "kueue-guard-system")
		Expect(err).NotTo(HaveOccurred())
		metrics, err = handlers.NewMetrics(prometheus.NewRegistry())
		Expect(err).NotTo(HaveOccurred())
		seen = nil
	})
	observe := func(webhook string, _ admission.Request, resp admission.Response) {
		seen = append(seen, webhook)
	}

	It("answers a CREATE with a JSON patch that sets the queue", func() {
		raw, _ := json.Marshal(fixtures.Job("a", "w").Obj().Object)
		resp := handlers.NewMutatingWorkloads(pipeline, view, metrics).WithObserver(observe).
			Handle(context.Background(), request(admissionv1.Create, jobKind, raw))
		Expect(resp.Allowed).To(BeTrue())
		Expect(resp.Patches).To(ContainElement(HaveField("Path", "/metadata/labels")))
		Expect(seen).To(Equal([]string{"mutate-workloads"}))
	})

	It("denies with a 422 Invalid whose causes carry field and [rule] message", func() {
		raw, _ := json.Marshal(fixtures.AppWrapper("a", "w").Queue("q").Set(true, "spec", "suspend").Obj().Object)
		resp := handlers.NewValidatingWorkloads(pipeline, view, metrics).Handle(context.Background(),
			request(admissionv1.Create, metav1.GroupVersionKind{Group: "workload.codeflare.dev", Version: "v1beta2", Kind: "AppWrapper"}, raw))
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Code).To(BeEquivalentTo(422))
		Expect(resp.Result.Reason).To(Equal(metav1.StatusReasonInvalid))
		Expect(resp.Result.Details.Causes).To(ConsistOf(And(
			HaveField("Type", metav1.CauseType("FieldValueForbidden")),
			HaveField("Field", "metadata.labels[kueue.x-k8s.io/queue-name]"),
			HaveField("Message", ContainSubstring("[kueue_guard.unsupported_integration] AppWrapper")),
		)))
	})

	DescribeTable("answers unreadable input with a 400 that says what is wrong, never a panic",
		func(raw []byte, want string) {
			resp := handlers.NewMutatingWorkloads(pipeline, view, metrics).Handle(context.Background(),
				request(admissionv1.Create, jobKind, raw))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))
			Expect(resp.Result.Message).To(ContainSubstring(want))
		},
		Entry("no object", nil, "admission request has no object"),
		Entry("not JSON", []byte("{not json"), "is not a valid Kubernetes object"),
		Entry("no kind", []byte(`{"metadata":{"name":"x"}}`), "is not a valid Kubernetes object"),
		Entry("a JSON array", []byte(`[1,2]`), "is not a valid Kubernetes object"),
		Entry("two objects", []byte(`{"apiVersion":"batch/v1","kind":"Job"}{"kind":"Job"}`), "is not a valid Kubernetes object"),
		Entry("a kind that is not a string", []byte(`{"apiVersion":"batch/v1","kind":5}`), "is not a valid Kubernetes object"),
		Entry("a number too large for a float", []byte(`{"apiVersion":"batch/v1","kind":"Job","spec":{"parallelism":1e999}}`), "is not a valid Kubernetes object"),
	)

	It("answers an object with fields of the wrong type with an internal error, not a crash", func() {
		resp := handlers.NewMutatingWorkloads(pipeline, view, metrics).Handle(context.Background(),
			request(admissionv1.Create, jobKind, []byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"w","labels":"x"},"spec":[]}`)))
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusInternalServerError))
		Expect(resp.Result.Message).To(ContainSubstring("internal error in queue-defaulting"))
	})

	It("lets DELETE through without reading an object", func() {
		resp := handlers.NewValidatingWorkloads(pipeline, view, metrics).Handle(context.Background(),
			request(admissionv1.Delete, jobKind, nil))
		Expect(resp.Allowed).To(BeTrue())
	})

	DescribeTable("answers from the envelope alone when the path has nothing to do, reading no object",
		func(newHandler func(*guard.Pipeline, cluster.View, *handlers.Metrics) *handlers.Handler, req admission.Request) {
			req.Object.Raw = []byte("{not json")
			resp := newHandler(pipeline, view, metrics).Handle(context.Background(), req)
			Expect(resp.Allowed).To(BeTrue())
			Expect(resp.Patches).To(BeEmpty())
		},
		Entry("an UPDATE on the mutating path: defaulting is at creation", handlers.NewMutatingWorkloads,
			request(admissionv1.Update, jobKind, nil)),
		Entry("a kind outside the catalog", handlers.NewValidatingWorkloads,
			request(admissionv1.Create, metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, nil)),
		Entry("an exempt namespace", handlers.NewValidatingWorkloads,
			func() admission.Request {
				r := request(admissionv1.Create, jobKind, nil)
				r.Namespace = "kube-system"
				return r
			}()),
		Entry("a subresource other than scale", handlers.NewValidatingWorkloads,
			func() admission.Request {
				r := request(admissionv1.Update, jobKind, nil)
				r.SubResource = "status"
				return r
			}()),
	)

	It("counts a request with an operation no API server sends under one series, however many it makes up", func() {
		// Anyone who reaches the webhook's port can send a review: a made-up
		// operation in each must not add a metric series each.
		reg := prometheus.NewRegistry()
		m, err := handlers.NewMetrics(reg)
		Expect(err).NotTo(HaveOccurred())
		raw, _ := json.Marshal(fixtures.Job("a", "w").Obj().Object)
		for i := range 50 {
			for _, h := range []*handlers.Handler{handlers.NewMutatingWorkloads(pipeline, view, m), handlers.NewValidatingWorkloads(pipeline, view, m)} {
				h.Handle(context.Background(), request(admissionv1.Operation("MADE-UP-"+strconv.Itoa(i)), jobKind, raw))
			}
		}
		families, err := reg.Gather()
		Expect(err).NotTo(HaveOccurred())
		ops := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "kueue_guard_admission_requests_total" {
				continue
			}
			for _, series := range f.GetMetric() {
				for _, l := range series.GetLabel() {
					if l.GetName() == "operation" {
						ops[l.GetValue()] += series.GetCounter().GetValue()
					}
				}
			}
		}
		Expect(ops).To(HaveKeyWithValue("other", 100.0))
		for op := range ops {
			Expect(op).To(BeElementOf("CREATE", "UPDATE", "DELETE", "CONNECT", "other"))
		}
	})

	It("still reads, and refuses, an unreadable object the path would judge", func() {
		for _, h := range []*handlers.Handler{handlers.NewMutatingWorkloads(pipeline, view, metrics), handlers.NewValidatingWorkloads(pipeline, view, metrics)} {
			resp := h.Handle(context.Background(), request(admissionv1.Create, jobKind, []byte("{not json")))
			Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))
		}
	})
})
