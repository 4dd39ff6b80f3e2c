package handlers_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/kueue-guard/kueue-guard/pkg/handlers"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// fuzzSeeds are one object of every catalog kind the fixtures build, queued
// and not, as the API server would send them.
func fuzzSeeds() [][]byte {
	var out [][]byte
	for _, b := range fixtures.EveryKind("ml") {
		for _, obj := range []fixtures.Object{b, b.Queue("q")} {
			raw, err := json.Marshal(obj.Obj().Object)
			if err != nil {
				panic(err)
			}
			out = append(out, raw)
		}
	}
	return out
}

// FuzzHandle sends any object bytes, as any catalog kind and operation, to
// both workload paths of the real pipeline with the shipped policies, and the
// same as a whole AdmissionReview body to the HTTP side. Nothing may panic (the
// handler does not recover: a panic here would take a request down in the
// server, contained only by Serve), and every answer carries the request's uid.
// The review's answer over HTTP on either path (the validating one decodes the
// objects with the review, the mutating one keeps their bytes) must be the
// handler's on the review decoded in two steps (objects as raw bytes).
// The seeds run with every `go test`; `make fuzz` runs it long.
func FuzzHandle(f *testing.F) {
	for i, seed := range fuzzSeeds() {
		f.Add(seed, uint8(i), uint8(i%3))
	}
	f.Add([]byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"labels":"x"},"spec":[]}`), uint8(0), uint8(0))
	f.Add([]byte(`{"apiVersion":"batch/v1","kind":"Job","spec":{"template":{"spec":{"containers":[{"resources":{"requests":{"cpu":"-1e999"}}}]}}}}`), uint8(0), uint8(1))
	f.Add([]byte(`null`), uint8(3), uint8(2))
	f.Add([]byte(`{"apiVersion":"batch/v1","metadata":{"name":"w"}}`), uint8(0), uint8(1))

	p, view := handlerBenchPipeline(f, 0)
	catalog := integrations.All()
	paths := []*handlers.Handler{handlers.NewMutatingWorkloads(p, view, nil), handlers.NewValidatingWorkloads(p, view, nil)}
	ops := []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete}
	served := []http.Handler{handlers.Serve(paths[0], logr.Discard()), handlers.Serve(paths[1], logr.Discard())}

	f.Fuzz(func(t *testing.T, obj []byte, kind, op uint8) {
		in := catalog[int(kind)%len(catalog)]
		ar := admissionv1.AdmissionRequest{
			UID: "fuzz", Operation: ops[int(op)%len(ops)], Namespace: "ml", Name: "w",
			Kind:   metav1.GroupVersionKind{Group: in.GVK.Group, Version: in.GVK.Version, Kind: in.GVK.Kind},
			Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: obj},
		}
		for _, h := range paths {
			resp := h.Handle(t.Context(), admission.Request{AdmissionRequest: ar})
			if !resp.Allowed && (resp.Result == nil || resp.Result.Message == "") {
				t.Fatalf("a refusal without a message: %+v", resp.AdmissionResponse)
			}
		}
		// The same bytes as a whole review body, and inside one.
		review := reviewJSON(t, ar)
		got := make([]*admissionv1.AdmissionResponse, len(served))
		for i, serve := range served {
			serveBody(t, serve, obj)
			got[i] = serveBody(t, serve, review)
		}
		var decoded admissionv1.AdmissionReview
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(review, &decoded); err != nil || decoded.Request == nil {
			return
		}
		twoStep := admission.Request{AdmissionRequest: *decoded.Request}
		for i, h := range paths {
			want := h.Handle(t.Context(), twoStep)
			if err := want.Complete(twoStep); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(roundTrip(t, want.AdmissionResponse), got[i]); diff != "" {
				t.Fatalf("the review's answer differs from the handler's on its two-step decode (-handler +served):\n%s", diff)
			}
		}
	})
}

// serveBody posts body to serve and decodes the response it answers.
func serveBody(t *testing.T, serve http.Handler, body []byte) *admissionv1.AdmissionResponse {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	serve.ServeHTTP(rec, req)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("not an AdmissionReview answer: %v: %s", err, rec.Body)
	}
	return out.Response
}

// roundTrip is resp as the API server reads it.
func roundTrip(t *testing.T, resp admissionv1.AdmissionResponse) *admissionv1.AdmissionResponse {
	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var out admissionv1.AdmissionResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func reviewJSON(_ *testing.T, ar admissionv1.AdmissionRequest) []byte {
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &ar})
	if err != nil {
		// RawExtension refuses bytes that are not JSON; the body alone covers those.
		return []byte("{}")
	}
	return body
}
