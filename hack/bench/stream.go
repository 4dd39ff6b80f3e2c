package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// The distinct-workload streams. One body sent again and again is the best case
// of every cache on the way; a cluster sends workloads that differ. A stream is a
// fixed sequence of AdmissionReviews of one kind and operation, each with its own
// metadata.name, metadata.uid and request uid, which the workers of a point send
// in turn. A share of them (--stream-repeat-share) reuse one of a few shapes, as
// a CronJob's Jobs or a hyper-parameter sweep do; the others have a shape no
// other request of the stream has (their cpu request, in millicores, is theirs
// alone). Every workload is queued and held as kueue-guard's mutating webhook
// leaves it, so that the policies judge every request.

// stream is every request of a stream, encoded before the load: a worker costs
// the client the same as with one body.
type stream struct {
	// Reviews and Inputs are each request's AdmissionReview and OPA's input.
	Reviews, Inputs [][]byte
	// Names are the workloads' names, which name a request in a mismatch.
	Names []string
	// Want is the reference's answer to each request (decisions.go).
	Want []policyAnswer
	// Marks are where a unique shape's request carries its pass digits
	// (passes.go), nil for a repeated shape's; LastWant is the reference's
	// answer to it as the last pass would send it.
	Marks    [][]int
	LastWant []policyAnswer
	// Shapes counts the distinct shapes, Repeated the requests of a shared
	// one, Grows the UPDATEs that ask Kueue for more.
	Shapes, Repeated, Grows int
}

const (
	// streamSeed seeds the streams: every run sends the same requests.
	streamSeed = 20250601
	// repeatedShapes is how many shapes the repeated share is drawn from.
	repeatedShapes = 8
	// growShare is the share of an UPDATE stream's requests that grow the
	// workload (more pods, a larger request), which the policies judge in
	// full; the others change an annotation, as most updates do.
	growShare = 0.2
)

// shape is what the workloads of a stream differ by.
type shape struct {
	id string
	// pods is a Job's parallelism, and a JobSet's workers' (at most 4).
	pods int64
	// replicas is the JobSet's workers' replicas; roles its replicated
	// jobs, the workers and up to three others.
	replicas int64
	roles    int
	// The main container's requests: cpu in millicores, memory in MiB, and
	// GPUs (most shapes have none).
	cpuMilli, memMi, gpus int64
	// sidecars are a Job's containers besides the main one; env the main
	// container's environment variables.
	sidecars, env int
	// maxExec: the workload carries Kueue's max-exec-time label, as the
	// shipped policies recommend; the others get their warning.
	maxExec bool
	// unique: no other request has this shape (its cpu request carries
	// the pass digits).
	unique bool
}

// randomShape draws a shape; cpuMilli is given, to make unique shapes unique.
func randomShape(rng *rand.Rand, id string, cpuMilli int64) shape {
	s := shape{id: id, pods: 1 + rng.Int64N(8), replicas: 1 + rng.Int64N(2), roles: 1 + rng.IntN(4),
		cpuMilli: cpuMilli, memMi: 256 * (1 + rng.Int64N(16)), sidecars: rng.IntN(3), env: 1 + rng.IntN(40),
		maxExec: rng.Float64() < 0.9}
	if rng.Float64() < 0.1 {
		s.gpus = 1 + rng.Int64N(2)
	}
	return s
}

func (s shape) cpu() string {
	if s.unique {
		return uniqueCPU(s.cpuMilli)
	}
	return strconv.FormatInt(s.cpuMilli, 10) + "m"
}

func (s shape) memory() string { return strconv.FormatInt(s.memMi, 10) + "Mi" }

func (s shape) labels(app string) map[string]any {
	l := map[string]any{"app.kubernetes.io/name": app, "app.kubernetes.io/instance": "shape-" + s.id}
	if s.maxExec {
		l[maxExecTimeLabel] = "3600"
	}
	return l
}

// streamWorkload is one workload of a kind's streams, as the mutating webhook
// leaves it.
type streamWorkload struct {
	obj   *unstructured.Unstructured
	shape shape
}

// The streams' kinds and operations, and their names: "Job CREATE stream", ...
var (
	streamKinds = []string{"Job", "JobSet"}
	streamOps   = []admissionv1.Operation{admissionv1.Create, admissionv1.Update}
)

func streamName(kind string, op admissionv1.Operation) string {
	return kind + " " + string(op) + " stream"
}

// streamNames are the streams' names, in the order they are built.
func streamNames() []string {
	var out []string
	for _, kind := range streamKinds {
		for _, op := range streamOps {
			out = append(out, streamName(kind, op))
		}
	}
	return out
}

// buildStreams builds the four streams, Job and JobSet, CREATE and UPDATE, of n
// requests each; share of them have a repeated shape.
func buildStreams(ctx context.Context, p *admission.Pipeline, ref *referee, n int, share float64) ([]*body, error) {
	if n == 0 {
		return nil, nil
	}
	var out []*body
	for k, kind := range streamKinds {
		rng := rand.New(rand.NewPCG(streamSeed, uint64(k)))
		workloads, err := streamWorkloads(ctx, p, ref, rng, kind, n, share)
		if err != nil {
			return nil, err
		}
		for _, op := range streamOps {
			b, err := newStream(ctx, ref, rng, kind, op, workloads)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// streamWorkloads draws n workloads of a kind and runs kueue-guard's defaulting
// on each.
func streamWorkloads(ctx context.Context, p *admission.Pipeline, ref *referee, rng *rand.Rand, kind string, n int, share float64) ([]streamWorkload, error) {
	shapes := make([]shape, repeatedShapes)
	for k := range shapes {
		// Whole multiples of 250m: never the odd millicores of a unique shape.
		shapes[k] = randomShape(rng, "r"+strconv.Itoa(k), 250*(1+rng.Int64N(8)))
	}
	out := make([]streamWorkload, n)
	for i := range out {
		repeated := rng.Float64() < share
		s := shapes[rng.IntN(len(shapes))]
		if !repeated {
			s = randomShape(rng, "u"+strconv.Itoa(i), 101+2*int64(i))
			s.unique = true
		}
		obj := streamObject(kind, s, fmt.Sprintf("%s-%s-%05d", streamPrefix(kind), s.id, i))
		obj.SetUID(types.UID(newUUID(rng)))
		queued, err := defaulted(ctx, p, obj, ref.view)
		if err != nil {
			return nil, fmt.Errorf("defaulting %s %s: %w", kind, obj.GetName(), err)
		}
		// As the API server sends every object: a resourceVersion, a
		// generation and managedFields (one manager's entry naming every
		// field, as a client-side apply writes it).
		stored := fixtures.Object{Unstructured: queued}.AsStored().Obj()
		stored.SetUID(obj.GetUID())
		out[i] = streamWorkload{obj: stored, shape: s}
	}
	return out, nil
}

// newStream encodes a kind's workloads as one operation's stream, and
// evaluates the reference's answer to each. What is drawn is drawn in order,
// so that the stream is the same every run; the encoding and the reference
// evaluations, most of the time it takes, run on every core.
func newStream(ctx context.Context, ref *referee, rng *rand.Rand, kind string, op admissionv1.Operation, workloads []streamWorkload) (*body, error) {
	name := streamName(kind, op)
	n := len(workloads)
	s := &stream{Reviews: make([][]byte, n), Inputs: make([][]byte, n), Want: make([]policyAnswer, n), Names: make([]string, n),
		Marks: make([][]int, n), LastWant: make([]policyAnswer, n)}
	reviews := make([]*admissionv1.AdmissionReview, n)
	shapes := map[string]bool{}
	for i, w := range workloads {
		object, old := w.obj, (*unstructured.Unstructured)(nil)
		if op == admissionv1.Update {
			grows := rng.Float64() < growShare
			object, old = updated(w.obj, kind, rng, grows, i), w.obj
			if grows {
				s.Grows++
			}
		}
		reviews[i] = admissionReview(kind, op, object, old)
		reviews[i].Request.UID = types.UID(newUUID(rng))
		s.Names[i], shapes[w.shape.id] = object.GetName(), true
		if !w.shape.unique {
			s.Repeated++
		}
	}
	s.Shapes = len(shapes)
	err := forEach(ctx, n, runtime.GOMAXPROCS(0), func(_, i int) error {
		var err error
		if s.Reviews[i], err = json.Marshal(reviews[i]); err != nil {
			return err
		}
		if s.Inputs[i], s.Want[i], err = ref.decide(ctx, reviews[i]); err != nil {
			return fmt.Errorf("%s, %s: %w", name, s.Names[i], err)
		}
		if sh := workloads[i].shape; sh.unique {
			if s.Marks[i], err = passMarks(s.Reviews[i], sh.cpuMilli); err == nil {
				s.LastWant[i], err = lastPassWant(ctx, ref, s.Reviews[i], s.Marks[i])
			}
			if err != nil {
				return fmt.Errorf("%s, %s: %w", name, s.Names[i], err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &body{Name: name, Kind: kind, Op: op, Queued: true, Review: s.Reviews[0], Input: s.Inputs[0], Stream: s, want: s.Want[0]}, nil
}

// forEach calls f for 0 ≤ i < n from workers goroutines, each taking the next
// i; f is told which worker calls it, for what a worker keeps (a connection's
// buffer). It returns the first error, after which no more calls start.
func forEach(ctx context.Context, n, workers int, f func(worker, i int) error) error {
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if errs[w] = f(w, i); errs[w] != nil {
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// updated is an UPDATE's object: obj with its revision annotation changed, and
// when it grows, more pods (a Job's parallelism, a JobSet's workers' replicas
// raised by one) or one more cpu for the main container: a whole cpu, since a
// pod asks for the most of its containers' sum and each init container's,
// and the JobSet's init container asks for 500m.
func updated(obj *unstructured.Unstructured, kind string, rng *rand.Rand, grows bool, i int) *unstructured.Unstructured {
	object := withRevision(obj, strconv.Itoa(i+2))
	if !grows {
		return object
	}
	spec := object.Object["spec"].(map[string]any)
	podSpec, counts := streamPaths(spec, kind)
	if rng.IntN(2) == 0 {
		for _, c := range counts {
			c.m[c.key] = c.m[c.key].(int64) + 1
		}
		return object
	}
	main := podSpec["containers"].([]any)[0].(map[string]any)
	resources := main["resources"].(map[string]any)
	for _, k := range []string{"requests", "limits"} {
		rl := resources[k].(map[string]any)
		q := resource.MustParse(rl["cpu"].(string))
		q.Add(resource.MustParse("1"))
		rl["cpu"] = q.String()
	}
	return object
}

// field is one field of an object's map, to be changed in place.
type field struct {
	m   map[string]any
	key string
}

// streamPaths finds, in place, the pod spec of the main container and the
// fields that count its pods: a Job's parallelism (its completions are
// immutable, and leave room for more), the JobSet's workers' replicas (its
// first replicated job).
func streamPaths(spec map[string]any, kind string) (podSpec map[string]any, counts []field) {
	if kind == "Job" {
		podSpec = spec["template"].(map[string]any)["spec"].(map[string]any)
		return podSpec, []field{{spec, "parallelism"}}
	}
	workers := spec["replicatedJobs"].([]any)[0].(map[string]any)
	job := workers["template"].(map[string]any)["spec"].(map[string]any)
	podSpec = job["template"].(map[string]any)["spec"].(map[string]any)
	return podSpec, []field{{workers, "replicas"}}
}

func streamPrefix(kind string) string {
	if kind == "Job" {
		return "eval"
	}
	return "train"
}

// streamObject is a workload of a shape: a Job like the repeated body's, with
// sidecars; a JobSet of the workers and up to three of the repeated body's
// other replicated jobs.
func streamObject(kind string, s shape, name string) *unstructured.Unstructured {
	var obj *unstructured.Unstructured
	if kind == "Job" {
		containers := []any{streamContainer("main", s.cpu(), s.memory(), s.env)}
		for k := range s.sidecars {
			containers = append(containers, streamContainer("sidecar-"+strconv.Itoa(k), "100m", "128Mi", 3))
		}
		// Kueue counts min(parallelism, completions) pods: completions
		// beyond parallelism, as a work queue's, let an update add pods.
		obj = fixtures.Job(benchNamespace, name).Parallelism(s.pods).Set(4*s.pods, "spec", "completions").
			Set(int64(600), "spec", "activeDeadlineSeconds").
			Set(s.labels("batch-eval"), "metadata", "labels").
			Set(containers, "spec", "template", "spec", "containers").Obj()
	} else {
		jobs := []any{fixtures.ReplicatedJob("workers", s.replicas, min(s.pods, 4), s.cpu(), s.memory())}
		others := []map[string]any{fixtures.ReplicatedJob("driver", 1, 1, "1", "4Gi"),
			fixtures.ReplicatedJob("parameter-servers", 2, 1, "1", "4Gi"), fixtures.ReplicatedJob("evaluator", 1, 1, "1", "2Gi")}
		for _, rj := range others[:s.roles-1] {
			jobs = append(jobs, rj)
		}
		obj = fixtures.JobSet(benchNamespace, name).Set(s.labels("llm-finetune"), "metadata", "labels").
			Set(jobs, "spec", "replicatedJobs").Obj()
	}
	podSpec, _ := streamPaths(obj.Object["spec"].(map[string]any), kind)
	main := podSpec["containers"].([]any)[0].(map[string]any)
	main["env"] = fixtures.EnvVars("main", s.env)
	if s.gpus > 0 {
		resources := main["resources"].(map[string]any)
		for _, k := range []string{"requests", "limits"} {
			resources[k].(map[string]any)["nvidia.com/gpu"] = strconv.FormatInt(s.gpus, 10)
		}
	}
	return obj
}

// streamContainer is a Job's container with requests equal to its limits.
func streamContainer(name, cpu, memory string, env int) map[string]any {
	return map[string]any{
		"name": name, "image": "registry.example/batch/" + name + ":1", "imagePullPolicy": "IfNotPresent",
		"command": []any{"python", "-m", "eval"},
		"env":     fixtures.EnvVars(name, env),
		"resources": map[string]any{"requests": map[string]any{"cpu": cpu, "memory": memory},
			"limits": map[string]any{"cpu": cpu, "memory": memory}},
	}
}

// newUUID draws a version 4 UUID.
func newUUID(rng *rand.Rand) string {
	a, b := rng.Uint64(), rng.Uint64()
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, 0x4000|a&0x0fff,
		0x8000|(b>>48)&0x3fff, b&0xffffffffffff)
}
