package handlers_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/handlers"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// BenchmarkHandler measures one AdmissionReview as the server answers it, HTTP
// and TLS aside: the review decoded, the handler, the pipeline with the shipped
// policies, and the encoded response. Its allocations
// per request are the budget docs/performance.md reports.
func BenchmarkHandler(b *testing.B) {
	// The decision cache is off but for the "cached" cases: one repeated body
	// would otherwise measure the cache, not an evaluation.
	p, view := handlerBenchPipeline(b, -1)
	mutate := handlers.Serve(handlers.NewMutatingWorkloads(p, view, nil), logr.Discard())
	validate := handlers.Serve(handlers.NewValidatingWorkloads(p, view, nil), logr.Discard())
	pc, viewc := handlerBenchPipeline(b, 0)
	cached := handlers.Serve(handlers.NewValidatingWorkloads(pc, viewc, nil), logr.Discard())
	job := fixtures.Job("ml", "j").Parallelism(4).Requests("cpu", "1").Requests("memory", "1Gi").Requests("nvidia.com/gpu", "1").Obj()
	// The queued bodies are held, as kueue-guard's mutating webhook leaves them:
	// an unheld one is denied by a built-in check before any policy runs.
	queued := fixtures.Object{Unstructured: job.DeepCopy()}.Queue("q").
		Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Held().Obj()
	jobSet := fixtures.JobSet("ml", "js").Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").
		Requests("cpu", "1").Requests("memory", "1Gi").Held().Obj()
	// A real training job's JobSet (about 20 KB): what a policy does not read
	// of its containers (environment, probes, mounts) should cost nothing.
	training := fixtures.TrainingJobSet("ml", "train").Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").
		Held().Obj()
	// The same as the API server sends it, managedFields and all.
	stored := fixtures.Object{Unstructured: training.DeepCopy()}.AsStored().Obj()
	unlabeledStored := fixtures.TrainingJobSet("ml", "train").AsStored().Obj()
	// A Job as the distinct-workload streams of make bench send it: a
	// sidecar, an environment, as the API server stores it.
	containers := []string{"spec", "template", "spec", "containers"}
	streamJob := fixtures.Object{Unstructured: queued.DeepCopy()}.
		FirstContainer(func(c map[string]any) { c["env"] = fixtures.EnvVars("main", 20) }, containers...).
		Containers(func(l []any) []any {
			sidecar := map[string]any{"name": "sidecar", "image": "registry.example/sidecar:1",
				"env": fixtures.EnvVars("sidecar", 3), "resources": map[string]any{
					"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
					"limits":   map[string]any{"cpu": "100m", "memory": "128Mi"}}}
			return append(l, sidecar)
		}, containers...).AsStored().Obj()
	cases := []struct {
		name    string
		webhook http.Handler
		op      admissionv1.Operation
		obj     *unstructured.Unstructured
	}{
		{"mutate/Job/CREATE/unlabeled", mutate, admissionv1.Create, job},
		{"mutate/Job/CREATE/labeled", mutate, admissionv1.Create, queued},
		{"mutate/Job/UPDATE", mutate, admissionv1.Update, queued},
		{"mutate/JobSet/CREATE/training-stored", mutate, admissionv1.Create, unlabeledStored},
		{"validate/Job/CREATE/labeled", validate, admissionv1.Create, queued},
		{"validate/Job/UPDATE/labeled", validate, admissionv1.Update, queued},
		{"validate/Job/CREATE/stream-stored", validate, admissionv1.Create, streamJob},
		{"validate/JobSet/CREATE/labeled", validate, admissionv1.Create, jobSet},
		{"validate/JobSet/CREATE/training", validate, admissionv1.Create, training},
		{"validate/JobSet/UPDATE/training", validate, admissionv1.Update, training},
		{"validate/JobSet/CREATE/training-stored", validate, admissionv1.Create, stored},
		{"validate/JobSet/UPDATE/training-stored", validate, admissionv1.Update, stored},
		{"validate/Job/CREATE/labeled/cached", cached, admissionv1.Create, queued},
		{"validate/Job/UPDATE/labeled/cached", cached, admissionv1.Update, queued},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			body := reviewBody(b, c.op, c.obj)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				c.webhook.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

func reviewBody(b *testing.B, op admissionv1.Operation, obj *unstructured.Unstructured) []byte {
	return reviewBodyOf(b, op, obj, nil)
}

// reviewBodyOf is the review of op on obj; an UPDATE's old object is old, else
// obj itself.
func reviewBodyOf(tb testing.TB, op admissionv1.Operation, obj, old *unstructured.Unstructured) []byte {
	tb.Helper()
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		tb.Fatal(err)
	}
	gvk := obj.GroupVersionKind()
	req := &admissionv1.AdmissionRequest{
		UID:       "bench",
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Namespace: obj.GetNamespace(), Name: obj.GetName(), Operation: op,
		Object: runtime.RawExtension{Raw: raw},
	}
	if op == admissionv1.Update {
		req.OldObject = runtime.RawExtension{Raw: raw}
		if old != nil {
			if req.OldObject.Raw, err = json.Marshal(old.Object); err != nil {
				tb.Fatal(err)
			}
		}
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// handlerBenchPipeline is the server's pipeline with the shipped policies and a
// decision cache of the given size (see policies.Options), over a
// namespace with a default queue, its LocalQueue and a ClusterQueue in a cohort.
func handlerBenchPipeline(b testing.TB, decisionCacheSize int) (*guard.Pipeline, cluster.View) {
	b.Helper()
	eng, err := policies.NewEngine(policies.Options{Directory: filepath.Join("..", "..", "policies"), OnError: config.OnErrorDeny,
		DecisionCacheSize: decisionCacheSize})
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.Load(); err != nil {
		b.Fatal(err)
	}
	p, err := guard.Build(config.Default(), "kueue-guard-system", policies.NewStep(eng))
	if err != nil {
		b.Fatal(err)
	}
	view, err := cluster.NewSnapshot(fixtures.GPUCluster(map[string]string{guard.DefaultQueueAnnotation: "q"})...)
	if err != nil {
		b.Fatal(err)
	}
	return p, view
}
