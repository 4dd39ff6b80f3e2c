package main

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// benchNamespace is where the workloads are: examples/cluster-state.yaml gives it
// a default LocalQueue (team-a-queue, on cq-cpu) and a default priority class.
const benchNamespace = "team-a"

// revisionAnnotation is what an UPDATE changes: an edit that asks Kueue for
// nothing more, as most updates of a queued workload are.
const revisionAnnotation = "bench.kueue-guard.io/revision"

// body is one AdmissionReview the harness sends, and the policy input kueue-guard
// builds for it (what OPA is sent).
type body struct {
	// Name is "Job CREATE", "JobSet UPDATE +queue", ...
	Name string
	Kind string
	Op   admissionv1.Operation
	// Queued bodies carry the queue label: on the mutating path there is then
	// nothing to do, and on the validating path it is what the API server sends
	// after defaulting, which is what makes the policies run.
	Queued bool
	// Review is the AdmissionReview's JSON.
	Review []byte
	// Input is {"input": ...} for OPA, the input kueue-guard's policies see;
	// only for queued bodies.
	Input []byte
	// CheckOnly bodies are measured by no point: they are sent once to
	// kueue-guard's validating webhook and to OPA, to compare their findings.
	CheckOnly bool
	// Stream, for a distinct-workload stream (stream.go), is every request of
	// it; Review and Input are then its first request's.
	Stream *stream
	// want is what the policies decide on a queued body, by the reference
	// evaluation: the decision check's answer.
	want policyAnswer
}

// floorName names the floor row a body's figures are compared with: the unqueued
// body of the same kind and operation (the floor reads no label, only the bytes),
// or for a stream the same stream.
func (b *body) floorName() string {
	if b.Stream != nil {
		return b.Name
	}
	return b.Kind + " " + string(b.Op)
}

// buildBodies builds every body: Job and JobSet, CREATE and UPDATE, without the
// queue label and with it. The queued objects are the unqueued ones after
// kueue-guard's own defaulting (run here, in process, against the same cluster
// state the server sees), so they are exactly what the API server would send to
// the validating webhook.
func buildBodies(ctx context.Context, pipeline *admission.Pipeline, ref *referee) ([]*body, error) {
	var out []*body
	for _, kind := range []string{"Job", "JobSet"} {
		plain := workloadObject(kind)
		queued, err := defaulted(ctx, pipeline, plain, ref.view)
		if err != nil {
			return nil, fmt.Errorf("defaulting the %s: %w", kind, err)
		}
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			for _, obj := range []*unstructured.Unstructured{plain, queued} {
				b, err := newBody(ctx, kind, op, obj, obj != plain, ref)
				if err != nil {
					return nil, err
				}
				out = append(out, b)
			}
		}
	}
	dry, err := dryRunBody(ctx, pipeline, ref)
	if err != nil {
		return nil, err
	}
	out = append(out, dry)
	check, err := violatingBody(ctx, pipeline, ref)
	if err != nil {
		return nil, err
	}
	return append(out, check), nil
}

// dryRunBody is the queued Job CREATE as `kubectl apply --dry-run=server`
// sends it: the validating webhook adds the simulate warning to it
// (simulation.warn: dryRun), whose cost this body measures beside the same
// CREATE without it; the bodies table shows its warning.
func dryRunBody(ctx context.Context, p *admission.Pipeline, ref *referee) (*body, error) {
	queued, err := defaulted(ctx, p, workloadObject("Job"), ref.view)
	if err != nil {
		return nil, fmt.Errorf("defaulting the dry-run Job: %w", err)
	}
	ar := admissionReview("Job", admissionv1.Create, queued, nil)
	ar.Request.DryRun = new(true)
	b := &body{Name: "Job CREATE +queue, dry run", Kind: "Job", Op: admissionv1.Create, Queued: true}
	if b.Review, err = json.Marshal(ar); err != nil {
		return nil, err
	}
	if b.Input, b.want, err = ref.decide(ctx, ar); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name, err)
	}
	return b, nil
}

// violatingBody is a queued Job CREATE that breaks the shipped policies: more
// GPUs than max-gpus-per-workload allows and than its ClusterQueue has, and no
// maximum execution time. The measured bodies break none, so without it the
// comparison of OPA's findings with kueue-guard's would compare nothing.
func violatingBody(ctx context.Context, p *admission.Pipeline, ref *referee) (*body, error) {
	job := fixtures.Job(benchNamespace, "too-many-gpus").Parallelism(4).Requests("nvidia.com/gpu", "4").Obj()
	queued, err := defaulted(ctx, p, job, ref.view)
	if err != nil {
		return nil, fmt.Errorf("defaulting the violating Job: %w", err)
	}
	b, err := newBody(ctx, "Job", admissionv1.Create, queued, true, ref)
	if err != nil {
		return nil, err
	}
	b.Name, b.CheckOnly = "Job CREATE +queue, violating (check only)", true
	return b, nil
}

// defaulted is obj as kueue-guard's mutating path leaves it; it fails when the
// path would change nothing, since the queued bodies would then not be queued.
func defaulted(ctx context.Context, p *admission.Pipeline, obj *unstructured.Unstructured, view cluster.View) (*unstructured.Unstructured, error) {
	req, err := decodeRequest(admissionReview(obj.GetKind(), admissionv1.Create, obj, nil))
	if err != nil {
		return nil, err
	}
	d, err := p.Mutate(ctx, req, view)
	if err != nil {
		return nil, err
	}
	if d.Object == nil {
		return nil, fmt.Errorf("kueue-guard's defaulting did not change it (%s): does %s still have a default queue?", d.Summary(), benchNamespace)
	}
	return d.Object, nil
}

// newBody builds one AdmissionReview; an UPDATE's object is obj with its revision
// annotation changed, and its oldObject is obj.
func newBody(ctx context.Context, kind string, op admissionv1.Operation, obj *unstructured.Unstructured, queued bool, ref *referee) (*body, error) {
	name := kind + " " + string(op)
	if queued {
		name += " +queue"
	}
	object, old := obj, (*unstructured.Unstructured)(nil)
	if op == admissionv1.Update {
		object, old = withRevision(obj, "2"), obj
	}
	ar := admissionReview(kind, op, object, old)
	b := &body{Name: name, Kind: kind, Op: op, Queued: queued}
	var err error
	if b.Review, err = json.Marshal(ar); err != nil {
		return nil, err
	}
	if queued {
		if b.Input, b.want, err = ref.decide(ctx, ar); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return b, nil
}

// withRevision is a copy of obj with its revision annotation set: an update that
// asks Kueue for nothing more.
func withRevision(obj *unstructured.Unstructured, revision string) *unstructured.Unstructured {
	object := obj.DeepCopy()
	annotations := object.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[revisionAnnotation] = revision
	object.SetAnnotations(annotations)
	return object
}

// admissionReview wraps objects in an AdmissionReview as the API server sends it.
func admissionReview(kind string, op admissionv1.Operation, object, old *unstructured.Unstructured) *admissionv1.AdmissionReview {
	gvk := object.GroupVersionKind()
	in, _ := integrations.Lookup(gvk.GroupKind())
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("bench-" + kind + "-" + string(op)),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: in.Resource},
		Name:      object.GetName(),
		Namespace: object.GetNamespace(),
		Operation: op,
		UserInfo: authenticationv1.UserInfo{Username: "alice@example.com",
			Groups: []string{"team-a-developers", "system:authenticated"}},
		Object: runtime.RawExtension{Raw: mustJSON(object)},
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(old)}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	}
}

// decodeRequest is the request as kueue-guard's handler decodes it.
func decodeRequest(ar *admissionv1.AdmissionReview) (*admission.Request, error) {
	r := ar.Request
	req := &admission.Request{
		UID: r.UID, Operation: r.Operation,
		Kind:      schema.GroupVersionKind{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind},
		Resource:  schema.GroupVersionResource{Group: r.Resource.Group, Version: r.Resource.Version, Resource: r.Resource.Resource},
		Namespace: r.Namespace, Name: r.Name, UserInfo: r.UserInfo, Raw: r.Object.Raw,
	}
	req.Object = &unstructured.Unstructured{}
	if err := req.Object.UnmarshalJSON(r.Object.Raw); err != nil {
		return nil, err
	}
	if len(r.OldObject.Raw) > 0 {
		req.OldObject = &unstructured.Unstructured{}
		if err := req.OldObject.UnmarshalJSON(r.OldObject.Raw); err != nil {
			return nil, err
		}
	}
	return req, nil
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// maxExecTimeLabel is Kueue's maximum execution time label, which the shipped
// max-exec-time-required policy asks for.
const maxExecTimeLabel = "kueue.x-k8s.io/max-exec-time-seconds"

// workloadObject is the benchmark's workload of a kind: a small Job (about 1 KB of
// JSON), or a JobSet of four replicated jobs with the containers, environment,
// volumes and scheduling constraints of a real training job (about 20 KB). Both
// fit team-a's ClusterQueue and follow the shipped policies, so that the
// policies evaluate in full and admit them: the common case.
func workloadObject(kind string) *unstructured.Unstructured {
	if kind == "Job" {
		job := fixtures.Job(benchNamespace, "resnet-eval").Parallelism(4).
			Requests("cpu", "2").Requests("memory", "4Gi").
			Set(int64(600), "spec", "activeDeadlineSeconds").
			Set(map[string]any{"app.kubernetes.io/name": "resnet-eval", "app.kubernetes.io/part-of": "vision",
				maxExecTimeLabel: "600"}, "metadata", "labels")
		job.FirstContainer(func(c map[string]any) {
			c["command"] = []any{"python", "-m", "eval"}
			c["args"] = []any{"--dataset=s3://datasets/imagenet/val", "--checkpoint=s3://models/resnet50/latest", "--batch-size=256"}
			c["env"] = fixtures.EnvVars("EVAL", 3)
		}, "spec", "template", "spec", "containers")
		return job.Obj()
	}
	js := fixtures.TrainingJobSet(benchNamespace, "llm-finetune").
		Set(map[string]any{"app.kubernetes.io/name": "llm-finetune", "app.kubernetes.io/part-of": "foundation-models",
			maxExecTimeLabel: "86400"}, "metadata", "labels")
	return js.Obj()
}
