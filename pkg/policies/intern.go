package policies

import (
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// The input's fixed vocabulary — the catalog's kinds, frameworks, operations,
// common resource names, the field names of pod-spec paths — is interned in
// OPA's table once, at start (OPA allows it only then), so that str shares one
// term for each instead of allocating it per request: about 40 allocations of
// a Job's input. Strings a requester writes are never interned: the table is
// not bounded.
func init() {
	words := []string{
		"CREATE", "UPDATE", "DELETE", "CONNECT",
		string(workload.UnitWorkload), string(workload.UnitPod), string(workload.UnitGroup),
		workload.PrioritySourceWorkload, workload.PrioritySourcePod,
		string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage),
		string(corev1.ResourceStorage), string(corev1.ResourcePods),
		"nvidia.com/gpu", "amd.com/gpu", "google.com/tpu", "habana.ai/gaudi", "aws.amazon.com/neuron",
		"spec", "template", "jobTemplate", "replicatedJobs", "leaderWorkerTemplate", "leaderTemplate",
		"workerTemplate", "headGroupSpec", "workerGroupSpecs", "rayClusterSpec", "components",
		"driver", "executor", "main", "leader", "worker", "launcher",
	}
	for _, in := range integrations.All() {
		words = append(words, in.GVK.Group, in.GVK.Version, in.GVK.Kind, in.EffectiveFramework())
	}
	ast.InternStringTerm(words...)
	for _, in := range integrations.All() {
		catalogGVKs[in.GVK] = newGVKTerm(in.GVK)
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

// str is a string term, OPA's interned one when the string is in its table.
func str(s string) *ast.Term { return ast.InternedTerm(s) }
