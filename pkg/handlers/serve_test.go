package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-logr/logr"
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

type panicHandler struct{}

func (panicHandler) Handle(context.Context, admission.Request) admission.Response { panic("boom") }

// post sends body to an http.Handler and decodes the AdmissionReview it answers.
func post(h http.Handler, contentType string, body []byte) (int, *admissionv1.AdmissionReview) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	h.ServeHTTP(rec, req)
	out := &admissionv1.AdmissionReview{}
	Expect(json.Unmarshal(rec.Body.Bytes(), out)).To(Succeed(), rec.Body.String())
	return rec.Code, out
}

func reviewOf(op admissionv1.Operation, obj []byte) []byte {
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "uid-7", Kind: jobKind, Namespace: "a", Name: "w", Operation: op,
			Object: runtime.RawExtension{Raw: obj}},
	})
	Expect(err).NotTo(HaveOccurred())
	return body
}

var _ = Describe("serving AdmissionReviews", func() {
	var mutate *handlers.Handler
	BeforeEach(func() {
		view, err := cluster.NewSnapshot(
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{guard.DefaultQueueAnnotation: "q"}}},
			&kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "q"}})
		Expect(err).NotTo(HaveOccurred())
		p, err := guard.Build(config.Default(), "kueue-guard-system")
		Expect(err).NotTo(HaveOccurred())
		m, err := handlers.NewMetrics(prometheus.NewRegistry())
		Expect(err).NotTo(HaveOccurred())
		mutate = handlers.NewMutatingWorkloads(p, view, m)
	})

	It("answers as controller-runtime's webhook does, for a patch and for an admission", func() {
		raw, _ := json.Marshal(fixtures.Job("a", "w").Obj().Object)
		labeled, _ := json.Marshal(fixtures.Job("a", "w").Queue("q").Obj().Object)
		for _, body := range [][]byte{reviewOf(admissionv1.Create, raw), reviewOf(admissionv1.Create, labeled), reviewOf(admissionv1.Update, raw)} {
			code, ours := post(handlers.Serve(mutate, logr.Discard()), "application/json", body)
			crCode, theirs := post(&admission.Webhook{Handler: mutate}, "application/json", body)
			Expect(code).To(Equal(crCode))
			Expect(ours.TypeMeta).To(Equal(theirs.TypeMeta))
			Expect(ours.Response).To(Equal(theirs.Response))
		}
		_, ours := post(handlers.Serve(mutate, logr.Discard()), "application/json", reviewOf(admissionv1.Create, raw))
		Expect(ours.Response.UID).To(BeEquivalentTo("uid-7"))
		Expect(*ours.Response.PatchType).To(Equal(admissionv1.PatchTypeJSONPatch))
		Expect(string(ours.Response.Patch)).To(ContainSubstring(`"/metadata/labels"`))
	})

	DescribeTable("refuses what is not an AdmissionReview v1 with a status that says why",
		func(contentType string, body []byte, wantCode int32, want string) {
			code, out := post(handlers.Serve(mutate, logr.Discard()), contentType, body)
			Expect(code).To(Equal(http.StatusOK), "the HTTP status is 200; the review carries the error, as the API server expects")
			Expect(out.Response.Allowed).To(BeFalse())
			Expect(out.Response.Result.Code).To(Equal(wantCode))
			Expect(out.Response.Result.Message).To(ContainSubstring(want))
		},
		Entry("an empty body", "application/json", nil, int32(400), "request body is empty"),
		Entry("another content type", "text/plain", []byte("{}"), int32(400), "expected application/json"),
		Entry("not JSON", "application/json", []byte("{not json"), int32(400), "decoding the admission review"),
		Entry("a v1beta1 review", "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`), int32(400), "expected a admission.k8s.io/v1 AdmissionReview"),
		Entry("no request", "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), int32(400), "has no request"),
		Entry("fields in the wrong case", "application/json",
			[]byte(`{"APIVersion":"admission.k8s.io/v1","Kind":"AdmissionReview","request":{"uid":"x"}}`), int32(400), "expected a admission.k8s.io/v1"),
		Entry("a body over the limit", "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"`+strings.Repeat("x", handlers.MaxRequestBytes)+`"}}`),
			int32(413), "request entity is too large"),
	)

	It("contains a handler's panic to its request", func() {
		h := handlers.Serve(panicHandler{}, logr.Discard())
		_, out := post(h, "application/json", reviewOf(admissionv1.Create, []byte(`{}`)))
		Expect(out.Response.Allowed).To(BeFalse())
		Expect(out.Response.Result.Code).To(BeEquivalentTo(500))
		Expect(out.Response.UID).To(BeEquivalentTo("uid-7"))
		_, out = post(handlers.Serve(mutate, logr.Discard()), "application/json", reviewOf(admissionv1.Update, []byte(`{}`)))
		Expect(out.Response.Allowed).To(BeTrue())
	})

	It("answers 429 with a Retry-After beyond the in-flight limit, before reading the body, and serves again once a slot frees", func() {
		blocking, entered, release := blockingHandler()
		h := handlers.NewInFlight(2, 0, nil).Limit(blocking)
		done := make(chan int, 2)
		for range 2 {
			go func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}")))
				done <- rec.Code
			}()
		}
		Eventually(entered).Should(Receive())
		Eventually(entered).Should(Receive())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}")))
		Expect(rec.Code).To(Equal(http.StatusTooManyRequests))
		Expect(rec.Header().Get("Retry-After")).To(Equal("1"))
		close(release)
		Eventually(done).Should(Receive(Equal(http.StatusOK)))
		Eventually(done).Should(Receive(Equal(http.StatusOK)))
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}")))
		Expect(rec.Code).To(Equal(http.StatusOK))
		Expect(handlers.NewInFlight(0, 0, nil)).To(BeNil(), "0 does not bound")
	})

	It("answers 429 beyond the byte budget of the large bodies in flight, and always serves a small one or one of any allowed size alone", func() {
		blocking, entered, release := blockingHandler()
		const kib = 1 << 10
		h := handlers.NewInFlight(0, 1000*kib, nil).Limit(blocking)
		body := func(n int) *http.Request {
			return httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", n)))
		}
		done := make(chan int, 4)
		serve := func(r *http.Request) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			done <- rec.Code
		}
		go serve(body(600 * kib))
		Eventually(entered).Should(Receive())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, body(500*kib))
		Expect(rec.Code).To(Equal(http.StatusTooManyRequests), "600 + 500 KiB are over the budget of 1000")
		Expect(rec.Header().Get("Retry-After")).To(Equal("1"))
		go serve(body(400 * kib))
		Eventually(entered).Should(Receive(), "600 + 400 KiB fit")
		go serve(body(handlers.SmallRequestBytes))
		Eventually(entered).Should(Receive(), "a small body is not counted against the bytes")
		close(release)
		for range 3 {
			Eventually(done).Should(Receive(Equal(http.StatusOK)))
		}

		// A body larger than the whole budget counts as the whole budget: it is
		// served alone, never refused forever.
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, body(5000*kib))
		Expect(rec.Code).To(Equal(http.StatusOK))
		unknown := body(10)
		unknown.ContentLength = -1
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, unknown)
		Expect(rec.Code).To(Equal(http.StatusOK), "a body of unknown length counts as the most a body may be")
	})
})

// blockingHandler answers 200 once release is closed, telling entered of each
// request it holds.
func blockingHandler() (http.Handler, chan struct{}, chan struct{}) {
	release, entered := make(chan struct{}), make(chan struct{}, 8)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	}), entered, release
}
