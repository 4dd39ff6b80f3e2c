package policies

import (
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// The input's fixed vocabulary — the catalog's kinds, frameworks and template
// paths, operations, Kubernetes' resource names, the objects' field names — is
// interned in OPA's table once, at start (OPA allows it only then), so that str
// shares one term for each instead of allocating it per request: about 60
// allocations of a Job's input. Strings a requester writes are never interned: the table is
// not bounded.
func init() {
	words := []string{
		string(admissionv1.Create), string(admissionv1.Update), string(admissionv1.Delete), string(admissionv1.Connect),
		string(workload.UnitWorkload), string(workload.UnitPod), string(workload.UnitGroup),
		workload.PrioritySourceWorkload, workload.PrioritySourcePod, string(kueue.DefaultPodSetName),
		string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage),
		string(corev1.ResourceStorage), string(corev1.ResourcePods),
		// Common accelerators' resource names, as a GPU Job's requests name them.
		// Interning only saves allocations: this need not follow the shipped
		// policies' gpu_resources, which a cluster's data.yaml may change.
		"nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "aws.amazon.com/neuron", "google.com/tpu",
	}
	for _, in := range integrations.All() {
		words = append(words, in.GVK.Group, in.GVK.Version, in.GVK.Kind, in.EffectiveFramework())
		for _, path := range in.PodTemplates {
			words = append(words, path...)
		}
	}
	// The field names of the objects the input carries: a pod spec's keys are
	// most of a workload's input, and OPA converts an interned key without
	// allocating (about 400 of a 20 KB JobSet's 3,600 conversion allocations).
	seen := map[reflect.Type]bool{}
	for _, t := range []reflect.Type{
		reflect.TypeFor[batchv1.Job](), reflect.TypeFor[batchv1.CronJob](), reflect.TypeFor[corev1.Pod](),
		reflect.TypeFor[jobsetapi.JobSet](),
	} {
		words = fieldNames(t, seen, words)
	}
	ast.InternStringTerm(words...)
	for _, in := range integrations.All() {
		catalogGVKs[in.GVK] = newGVKTerm(in.GVK)
		lastPaths[in.GVK] = new([2]atomic.Pointer[renderedPaths])
	}
}

// catalogGVKs are the catalog kinds' terms, built once: input.request.kind and
// input.workload.kind are one of them on every request the webhook judges.
var catalogGVKs = map[schema.GroupVersionKind]*ast.Term{}

func gvkTerm(gvk schema.GroupVersionKind) *ast.Term {
	if t, ok := catalogGVKs[gvk]; ok {
		return t
	}
	return newGVKTerm(gvk)
}

func newGVKTerm(gvk schema.GroupVersionKind) *ast.Term {
	return ast.ObjectTerm(item("group", str(gvk.Group)), item("version", str(gvk.Version)), item("kind", str(gvk.Kind)))
}

// fieldNames appends the JSON names of t's fields and of the types it holds.
func fieldNames(t reflect.Type, seen map[reflect.Type]bool, out []string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return out
	}
	seen[t] = true
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
		out = fieldNames(f.Type, seen, out)
	}
	return out
}

// str is a string term, OPA's interned one when the string is in its table.
func str(s string) *ast.Term { return ast.InternedTerm(s) }
