package workload_test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// Fixtures are plain JSON-shaped maps, as objects arrive from the API server or
// from a YAML file: numbers are int64, lists are []any.

const testNamespace = "team-a"

// rl is a resource list in fixture form: resource name → quantity string.
type rl map[string]string

func (r rl) anyMap() map[string]any {
	m := make(map[string]any, len(r))
	for k, v := range r {
		m[k] = v
	}
	return m
}

// ctr is a container with the given requests and limits (either may be nil).
func ctr(name string, requests, limits rl) map[string]any {
	res := map[string]any{}
	if requests != nil {
		res["requests"] = requests.anyMap()
	}
	if limits != nil {
		res["limits"] = limits.anyMap()
	}
	return map[string]any{"name": name, "image": "registry.example/" + name + ":1", "resources": res}
}

// podSpec is a pod spec with the given containers.
func podSpec(containers ...map[string]any) map[string]any {
	list := make([]any, len(containers))
	for i, c := range containers {
		list[i] = c
	}
	return map[string]any{"containers": list, "restartPolicy": "Never"}
}

// withInit adds init containers (a sidecar is an init container with
// restartPolicy Always).
func withInit(spec map[string]any, inits ...map[string]any) map[string]any {
	list := make([]any, len(inits))
	for i, c := range inits {
		list[i] = c
	}
	spec["initContainers"] = list
	return spec
}

// sidecar marks a container as a restartable init container.
func sidecar(c map[string]any) map[string]any {
	c["restartPolicy"] = "Always"
	return c
}

// withOverhead sets spec.overhead.
func withOverhead(spec map[string]any, overhead rl) map[string]any {
	spec["overhead"] = overhead.anyMap()
	return spec
}

// tmpl wraps a pod spec as a pod template.
func tmpl(spec map[string]any) map[string]any {
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "demo"}}, "spec": spec}
}

// cpu is the most common one-container template: one container requesting q CPUs.
func cpu(q string) map[string]any { return tmpl(podSpec(ctr("main", rl{"cpu": q}, nil))) }

// gpuLimit is a template whose container only limits GPUs, as most GPU
// manifests do; Kueue counts the limit as the request.
func gpuLimit(n string) map[string]any {
	return tmpl(podSpec(ctr("main", nil, rl{"nvidia.com/gpu": n})))
}

// object builds a namespaced object named "demo" with the given spec.
func object(apiVersion, kind string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": "demo", "namespace": testNamespace},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// jobSpec is a batch/v1 JobSpec with optional parallelism and completions
// (0 = leave unset).
func jobSpec(parallelism, completions int64, template map[string]any) map[string]any {
	s := map[string]any{"template": template}
	if parallelism > 0 {
		s["parallelism"] = parallelism
	}
	if completions > 0 {
		s["completions"] = completions
	}
	return s
}

func job(parallelism, completions int64, template map[string]any) *unstructured.Unstructured {
	return object("batch/v1", "Job", jobSpec(parallelism, completions, template))
}

// replicatedJob is one entry of a JobSet's spec.replicatedJobs (replicas 0 =
// leave unset).
func replicatedJob(name string, replicas, parallelism int64, template map[string]any) map[string]any {
	rj := map[string]any{"name": name, "template": map[string]any{"spec": jobSpec(parallelism, 0, template)}}
	if replicas > 0 {
		rj["replicas"] = replicas
	}
	return rj
}

func jobSet(rjs ...map[string]any) *unstructured.Unstructured {
	list := make([]any, len(rjs))
	for i, rj := range rjs {
		list[i] = rj
	}
	return object("jobset.x-k8s.io/v1alpha2", "JobSet", map[string]any{"replicatedJobs": list})
}

// rayClusterSpec is a Ray cluster with a 2-CPU head and the given worker groups.
func rayClusterSpec(workerGroups ...map[string]any) map[string]any {
	list := make([]any, len(workerGroups))
	for i, wg := range workerGroups {
		list[i] = wg
	}
	return map[string]any{
		"headGroupSpec":    map[string]any{"rayStartParams": map[string]any{}, "template": cpu("2")},
		"workerGroupSpecs": list,
	}
}

// workerGroup is a Ray worker group (replicas, numOfHosts 0 = leave unset).
func workerGroup(name string, replicas, numOfHosts int64, template map[string]any) map[string]any {
	wg := map[string]any{"groupName": name, "rayStartParams": map[string]any{}, "template": template}
	if replicas > 0 {
		wg["replicas"] = replicas
	}
	if numOfHosts > 0 {
		wg["numOfHosts"] = numOfHosts
	}
	return wg
}

// replicaSpec is a Kubeflow replica spec (replicas 0 = leave unset).
func replicaSpec(replicas int64, template map[string]any) map[string]any {
	rs := map[string]any{"template": template}
	if replicas > 0 {
		rs["replicas"] = replicas
	}
	return rs
}

// kubeflowJob builds a training-operator v1 job with its replica specs under field.
func kubeflowJob(kind, field string, specs map[string]any) *unstructured.Unstructured {
	return object("kubeflow.org/v1", kind, map[string]any{field: specs})
}

// Expectations.

func list(r rl) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range r {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func ps(name string, count int32, requests rl) workload.PodSet {
	return workload.PodSet{Name: name, Count: count, Requests: list(requests)}
}
