package workload

import (
	"math"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	leaderworkersetv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// The defaults below are the ones pod-set arithmetic depends on, applied the way
// the API server (built-in defaulting, or a CRD's structural-schema defaults)
// would before Kueue's adapters see the object. Admission requests arrive already
// defaulted, so applying them again changes nothing; manifests read from files do
// not, and Kueue's job adapter dereferences Job parallelism unconditionally.
// Each function states where its defaults come from.

// defaultJobSpec applies k8s.io/kubernetes SetDefaults_Job's counts: both
// completions and parallelism default to 1 when neither is set, parallelism to 1
// when only completions is set (completions stays unset for a work queue).
func defaultJobSpec(spec *batchv1.JobSpec) {
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
}

// defaultReplicas applies the apps/v1 default of 1 replica (Deployment,
// StatefulSet).
func defaultReplicas(replicas **int32) {
	if *replicas == nil {
		*replicas = ptr.To[int32](1)
	}
}

// defaultJobSet applies the JobSet CRD's default of 1 to replicatedJobs[].replicas
// (a non-pointer field, so "absent" is read from the unstructured object: an
// explicit 0 stays 0) and Job defaults to each Job template. Kueue's JobSet adapter
// already treats unset parallelism and completions like this; defaulting them
// keeps the decoded object what the JobSet controller will create.
func defaultJobSet(obj *unstructured.Unstructured, js *jobsetapi.JobSet) {
	raw, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicatedJobs")
	items, _ := raw.([]any)
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		if !fieldSet(items, i, "replicas") {
			rj.Replicas = 1
		}
		defaultJobSpec(&rj.Template.Spec)
	}
}

// fieldSet reports whether items[i] is an object with a non-null key: a null is
// pruned by the API server and then defaulted, like an absent field.
func fieldSet(items []any, i int, key string) bool {
	if i >= len(items) {
		return false
	}
	m, ok := items[i].(map[string]any)
	if !ok {
		return false
	}
	v, ok := m[key]
	return ok && v != nil
}

// defaultRayClusterSpec applies the RayCluster CRD's worker-group defaults
// (kuberay ray-operator v1.6.0): replicas 0, minReplicas 0, maxReplicas
// 2147483647. numOfHosts (default 1) is left alone: Kueue counts an absent, 0 or
// 1 alike. Note replicas: a worker group without replicas has
// none until an autoscaler adds them, whereas Kueue's adapter, given an
// undefaulted object, would count one.
// defaultRayJob applies the RayJob CRD's defaults that pod sets depend on:
// submissionMode K8sJobMode (Kueue then adds the submitter pod set), and the
// cluster spec's.
func defaultRayJob(rj *rayv1.RayJob) {
	if rj.Spec.SubmissionMode == "" {
		rj.Spec.SubmissionMode = rayv1.K8sJobMode
	}
	if rj.Spec.RayClusterSpec != nil {
		defaultRayClusterSpec(rj.Spec.RayClusterSpec)
	}
}

func defaultRayClusterSpec(spec *rayv1.RayClusterSpec) {
	for i := range spec.WorkerGroupSpecs {
		wgs := &spec.WorkerGroupSpecs[i]
		if wgs.Replicas == nil {
			wgs.Replicas = ptr.To[int32](0)
		}
		if wgs.MinReplicas == nil {
			wgs.MinReplicas = ptr.To[int32](0)
		}
		if wgs.MaxReplicas == nil {
			wgs.MaxReplicas = ptr.To[int32](math.MaxInt32)
		}
	}
}

// defaultLeaderWorkerSet applies the LeaderWorkerSet CRD's defaults (lws v0.8.0):
// replicas 1 and leaderWorkerTemplate.size 1.
func defaultLeaderWorkerSet(lws *leaderworkersetv1.LeaderWorkerSet) {
	defaultReplicas(&lws.Spec.Replicas)
	if lws.Spec.LeaderWorkerTemplate.Size == nil {
		lws.Spec.LeaderWorkerTemplate.Size = ptr.To[int32](1)
	}
}
