package workload

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// JobSpecPaths lists the path, from the object's root, of every batch/v1 JobSpec
// the object writes for the Job controller to run: a Job's spec, a CronJob's job
// template, each of a JobSet's replicated jobs, and the Jobs and JobSets an
// AppWrapper embeds. Pod replacement and failure policies live there, so a
// policy about how long a pod may outlive its quota reads them. Jobs that an
// operator builds from its own settings (an MPIJob's launcher, a RayJob's
// submitter, a TrainJob's runtime) are not the object's to write and are not
// listed.
func JobSpecPaths(obj *unstructured.Unstructured) [][]any {
	var out [][]any
	jobSpecs(obj.Object, nil, 0, &out)
	return out
}

// maxEmbedding bounds how deep AppWrappers may nest before the walk stops.
const maxEmbedding = 4

// jobSpecs appends the JobSpec paths of the object m, found at prefix.
func jobSpecs(m map[string]any, prefix []any, depth int, out *[][]any) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	group := schema.FromAPIVersionAndKind(apiVersion, kind).Group
	switch {
	case group == "batch" && kind == "Job":
		*out = append(*out, extend(prefix, "spec"))
	case group == "batch" && kind == "CronJob":
		*out = append(*out, extend(prefix, "spec", "jobTemplate", "spec"))
	case group == "jobset.x-k8s.io" && kind == "JobSet":
		// Read in place: NestedSlice would deep-copy every pod template.
		jobs, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "replicatedJobs")
		n, _ := jobs.([]any)
		for i := range n {
			*out = append(*out, extend(prefix, "spec", "replicatedJobs", i, "template", "spec"))
		}
	case group == "workload.codeflare.dev" && kind == "AppWrapper" && depth < maxEmbedding:
		raw, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "components")
		components, _ := raw.([]any)
		for i, c := range components {
			cm, _ := c.(map[string]any)
			if t, ok := cm["template"].(map[string]any); ok {
				jobSpecs(t, extend(prefix, "spec", "components", i, "template"), depth+1, out)
			}
		}
	}
}

// extend returns a new path: prefix followed by elems.
func extend(prefix []any, elems ...any) []any {
	return append(append(make([]any, 0, len(prefix)+len(elems)), prefix...), elems...)
}
