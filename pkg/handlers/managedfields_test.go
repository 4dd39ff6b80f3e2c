package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/handlers"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// managedFieldsPolicies read the objects' managedFields, which the webhook
// decodes only for a policy that reads them: by a path, and with the object
// taken whole.
var managedFieldsPolicies = map[string]string{
	"by-path.rego": `package kueue_guard.by_path

deny contains "a new manager is not allowed" if {
	some e in input.object.metadata.managedFields
	e.manager == "forbidden"
}

deny contains "an old manager is not allowed" if {
	some e in input.oldObject.metadata.managedFields
	e.manager == "forbidden-before"
}
`,
	"whole.rego": `package kueue_guard.whole

deny contains "a manager named in the object" if {
	walk(input.object, [_, v])
	v == "forbidden-anywhere"
}
`,
}

// storedJob is a queued Job as the API server sends it, managedFields and
// all, with the manager of its one entry set.
func storedJob(manager string) *unstructured.Unstructured {
	obj := fixtures.Object{Unstructured: fixtures.Job("ml", "j").Requests("cpu", "1").Requests("memory", "1Gi").Obj()}.
		Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Held().AsStored().Obj()
	entries := obj.Object["metadata"].(map[string]any)["managedFields"].([]any)
	entries[0].(map[string]any)["manager"] = manager
	return obj
}

var _ = Describe("objects' managedFields, left undecoded by the webhook", func() {
	var (
		validate http.Handler
		handler  *handlers.Handler
	)
	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		for name, text := range managedFieldsPolicies {
			Expect(os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600)).To(Succeed())
		}
		eng, err := policies.NewEngine(policies.Options{Directory: dir, OnError: config.OnErrorDeny})
		Expect(err).NotTo(HaveOccurred())
		Expect(eng.Load()).To(Succeed())
		p, err := guard.Build(config.Default(), "kueue-guard-system", policies.NewStep(eng))
		Expect(err).NotTo(HaveOccurred())
		view, err := cluster.NewSnapshot(fixtures.GPUCluster(map[string]string{guard.DefaultQueueAnnotation: "q"})...)
		Expect(err).NotTo(HaveOccurred())
		handler = handlers.NewValidatingWorkloads(p, view, nil)
		validate = handlers.Serve(handler, logr.Discard())
	})
	answer := func(op admissionv1.Operation, obj, old *unstructured.Unstructured) *admissionv1.AdmissionResponse {
		body := reviewBodyOf(GinkgoTB(), op, obj, old)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		validate.ServeHTTP(rec, req)
		Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
		var review admissionv1.AdmissionReview
		Expect(json.Unmarshal(rec.Body.Bytes(), &review)).To(Succeed())
		return review.Response
	}
	denials := func(r *admissionv1.AdmissionResponse) []string {
		if r.Allowed {
			return nil
		}
		var msgs []string
		for _, c := range r.Result.Details.Causes {
			msgs = append(msgs, c.Message)
		}
		return msgs
	}

	It("are decoded for a policy that reads them by path", func() {
		Expect(answer(admissionv1.Create, storedJob("kubectl"), nil).Allowed).To(BeTrue())
		Expect(denials(answer(admissionv1.Create, storedJob("forbidden"), nil))).To(ConsistOf(ContainSubstring("a new manager is not allowed")))
		Expect(denials(answer(admissionv1.Update, storedJob("kubectl"), storedJob("forbidden-before")))).
			To(ConsistOf(ContainSubstring("an old manager is not allowed")))
		Expect(answer(admissionv1.Update, storedJob("forbidden-before"), storedJob("kubectl")).Allowed).To(BeTrue())
	})

	It("are decoded for a policy when the review is decoded in two steps, its objects apart", func() {
		for _, c := range []struct {
			obj, old *unstructured.Unstructured
			denial   string
		}{
			{storedJob("forbidden"), nil, "a new manager is not allowed"},
			{storedJob("kubectl"), storedJob("forbidden-before"), "an old manager is not allowed"},
		} {
			var ar admissionv1.AdmissionReview
			Expect(json.Unmarshal(reviewBodyOf(GinkgoTB(), admissionv1.Update, c.obj, c.old), &ar)).To(Succeed())
			if c.old == nil {
				ar.Request.Operation, ar.Request.OldObject.Raw = admissionv1.Create, nil
			}
			resp := handler.Handle(context.Background(), admission.Request{AdmissionRequest: *ar.Request})
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Details.Causes).To(ConsistOf(HaveField("Message", ContainSubstring(c.denial))))
		}
	})

	It("count toward the object's shape, undecoded as they are", func() {
		// metadata.managedFields[0].fieldsV1 is five levels down: 95 more make
		// the object as deep as any it judges, 96 one level deeper.
		deepJob := func(levels int) *unstructured.Unstructured {
			obj := storedJob("kubectl")
			obj.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"] = fixtures.NestedMaps(levels, "f:x")
			return obj
		}
		Expect(answer(admissionv1.Create, deepJob(guard.MaxObjectDepth-5), nil).Allowed).To(BeTrue())
		deep := deepJob(guard.MaxObjectDepth - 4)
		for _, old := range []*unstructured.Unstructured{nil, storedJob("kubectl")} {
			op := admissionv1.Create
			if old != nil {
				op = admissionv1.Update
			}
			Expect(denials(answer(op, deep, old))).To(ConsistOf(ContainSubstring("kueue_guard.object_too_complex")))
			var ar admissionv1.AdmissionReview
			Expect(json.Unmarshal(reviewBodyOf(GinkgoTB(), admissionv1.Update, deep, old), &ar)).To(Succeed())
			ar.Request.Operation = op
			if old == nil {
				ar.Request.OldObject.Raw = nil
			}
			resp := handler.Handle(context.Background(), admission.Request{AdmissionRequest: *ar.Request})
			Expect(resp.Result.Details.Causes).To(ConsistOf(HaveField("Message", ContainSubstring("kueue_guard.object_too_complex"))))
		}
	})

	It("are decoded for a policy that reads the object whole", func() {
		Expect(denials(answer(admissionv1.Create, storedJob("forbidden-anywhere"), nil))).
			To(ConsistOf(ContainSubstring("a manager named in the object")))
	})
})
