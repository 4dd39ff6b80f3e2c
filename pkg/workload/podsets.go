package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	kfmpi "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	sparkv1beta2 "github.com/kubeflow/spark-operator/v2/api/v1beta2"
	kftrainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	awv1beta2 "github.com/project-codeflare/appwrapper/api/v1beta2"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	kueueappwrapper "sigs.k8s.io/kueue/pkg/controller/jobs/appwrapper"
	kueuejob "sigs.k8s.io/kueue/pkg/controller/jobs/job"
	kueuejobset "sigs.k8s.io/kueue/pkg/controller/jobs/jobset"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/jaxjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/paddlejob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/pytorchjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/tfjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/xgboostjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/kubeflowjob"
	kueuempijob "sigs.k8s.io/kueue/pkg/controller/jobs/mpijob"
	kueuepod "sigs.k8s.io/kueue/pkg/controller/jobs/pod"
	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobs/raycluster"
	kueuerayjob "sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
	kueuespark "sigs.k8s.io/kueue/pkg/controller/jobs/sparkapplication"
	kueueutilpod "sigs.k8s.io/kueue/pkg/util/pod"
	leaderworkersetv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// podSetsFunc computes Kueue's pod sets of one kind from its unstructured form.
// The returned templates are private copies the caller may modify.
type podSetsFunc func(ctx context.Context, obj *unstructured.Unstructured, o *Options) ([]kueue.PodSet, error)

// podSetBuilders dispatches on group and kind, one entry per catalog kind (a test
// checks the two lists agree).
//
// Kueue's adapter, called as is (after defaulting): Job, CronJob (its jobTemplate
// as a Job), Pod (a single pod; a pod group as podGroupPodSets counts it), JobSet, MPIJob, the five Kubeflow v1 jobs, RayCluster, AppWrapper,
// SparkApplication.
//
// Documented fallbacks, and why:
//   - Deployment, StatefulSet, LeaderWorkerSet: Kueue has no PodSets adapter for
//     them (it manages their pods through the pod integration, and the pod-group
//     builders are unexported reconciler internals). The pod template goes through
//     Kueue's Pod adapter and the counts follow Kueue's reconcilers: "main" ×
//     replicas; LeaderWorkerSet "leader" + "worker" (or "main" without a leader
//     template) per group, times replicas.
//   - RayService: its adapter calls raycluster.UpdatePodSets with the
//     package-level reconciler's client, which is nil outside Kueue's manager.
//     It uses raycluster.BuildPodSets, the pure part. (RayJob uses its adapter:
//     see rayJobPodSets.)
//   - TrainJob: its adapter reads the (Cluster)TrainingRuntime through the
//     reconciler's client. The same computation runs here over the runtime from
//     Options.Runtimes (trainJobRuntimePodSets); without the runtime, a stand-in
//     (trainJobStandInPodSets).
var podSetBuilders = map[schema.GroupKind]podSetsFunc{
	{Group: "batch", Kind: "Job"}:                                jobPodSets,
	{Group: "batch", Kind: "CronJob"}:                            cronJobPodSets,
	{Group: "", Kind: "Pod"}:                                     podPodSets,
	{Group: "apps", Kind: "Deployment"}:                          deploymentPodSets,
	{Group: "apps", Kind: "StatefulSet"}:                         statefulSetPodSets,
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: leaderWorkerSetPodSets,
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}:                   jobSetPodSets,
	{Group: "ray.io", Kind: "RayJob"}:                            rayJobPodSets,
	{Group: "ray.io", Kind: "RayCluster"}:                        rayClusterPodSets,
	{Group: "ray.io", Kind: "RayService"}:                        rayServicePodSets,
	{Group: "kubeflow.org", Kind: "MPIJob"}:                      mpiJobPodSets,
	{Group: "kubeflow.org", Kind: "PyTorchJob"}:                  kubeflowPodSets(pytorchjobControl),
	{Group: "kubeflow.org", Kind: "TFJob"}:                       kubeflowPodSets(tfjobControl),
	{Group: "kubeflow.org", Kind: "XGBoostJob"}:                  kubeflowPodSets(xgboostjobControl),
	{Group: "kubeflow.org", Kind: "PaddleJob"}:                   kubeflowPodSets(paddlejobControl),
	{Group: "kubeflow.org", Kind: "JAXJob"}:                      kubeflowPodSets(jaxjobControl),
	{Group: "trainer.kubeflow.org", Kind: "TrainJob"}:            trainJobPodSets,
	{Group: "workload.codeflare.dev", Kind: "AppWrapper"}:        appWrapperPodSets,
	{Group: "sparkoperator.k8s.io", Kind: "SparkApplication"}:    sparkApplicationPodSets,
}

// decoded decodes obj into a new T.
func decoded[T any](obj *unstructured.Unstructured) (*T, error) {
	t := new(T)
	if err := decodeInto(obj, t); err != nil {
		return nil, err
	}
	return t, nil
}

func jobPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	job, err := decodedForQuota[batchv1.Job](obj)
	if err != nil {
		return nil, err
	}
	defaultJobSpec(&job.Spec)
	return (*kueuejob.Job)(job).PodSets(ctx, nil)
}

// cronJobPodSets summarizes the Job a CronJob creates: Kueue manages each of them
// as a batch/job workload.
func cronJobPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	cj, err := decodedForQuota[batchv1.CronJob](obj)
	if err != nil {
		return nil, err
	}
	tmpl := &cj.Spec.JobTemplate
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        cj.Name,
			Namespace:   cj.Namespace,
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
		},
		Spec: tmpl.Spec,
	}
	defaultJobSpec(&job.Spec)
	return (*kueuejob.Job)(job).PodSets(ctx, nil)
}

func podPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	pod, err := decoded[corev1.Pod](obj)
	if err != nil {
		return nil, err
	}
	pss, err := kueuepod.FromObject(pod).PodSets(ctx, nil)
	// Kueue's own reading of the group's name: from 0.19 the annotation
	// (WorkloadIdentifierAnnotations), else the label.
	if err != nil || kueueutilpod.GetPodGroupName(pod) == "" {
		return pss, err
	}
	return podGroupPodSets(pod, pss)
}

// podGroupPodSets is the Workload Kueue makes of a pod group (pods annotated or
// labeled kueue.x-k8s.io/pod-group-name): one pod set per pod role (Kueue's role hash
// of the pod spec), counting that role's pods. Admission sees one pod at a
// time, so the group is taken to be pod-group-total-count pods of this pod's
// role: exactly Kueue's Workload when the group's pods are alike (every pod
// group a Job-like controller creates), and otherwise, over all the group's
// pods, at least what Kueue charges for every resource (each pod is judged, and
// the largest pod's estimate bounds the group's total). A count Kueue would
// refuse is an error here too.
func podGroupPodSets(pod *corev1.Pod, pss []kueue.PodSet) ([]kueue.PodSet, error) {
	raw, ok := pod.Annotations[podconstants.GroupTotalCountAnnotation]
	if !ok {
		return nil, fmt.Errorf("a pod of group %q has no %s annotation", kueueutilpod.GetPodGroupName(pod), podconstants.GroupTotalCountAnnotation)
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("annotation %s=%q: the group's pod count must be a whole number from 1 to %d",
			podconstants.GroupTotalCountAnnotation, raw, math.MaxInt32)
	}
	if len(pss) != 1 {
		return nil, fmt.Errorf("internal error: pod adapter returned %d pod sets", len(pss))
	}
	role, err := kueueutilpod.GenerateRoleHash(&pod.Spec)
	if err != nil {
		return nil, fmt.Errorf("computing the pod's role in group %q: %w", kueueutilpod.GetPodGroupName(pod), err)
	}
	pss[0].Name = kueue.NewPodSetReference(role)
	pss[0].Count = int32(n)
	return pss, nil
}

// templatePodSet runs a pod template through Kueue's Pod adapter (which copies
// the spec and builds the topology request from the template's annotations) and
// names and counts the result.
func templatePodSet(ctx context.Context, name kueue.PodSetReference, count int32, tmpl *corev1.PodTemplateSpec) (kueue.PodSet, error) {
	pss, err := kueuepod.FromObject(&corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}).PodSets(ctx, nil)
	if err != nil {
		return kueue.PodSet{}, err
	}
	if len(pss) != 1 {
		return kueue.PodSet{}, fmt.Errorf("internal error: pod adapter returned %d pod sets", len(pss))
	}
	ps := pss[0]
	ps.Name = name
	ps.Count = count
	return ps, nil
}

func deploymentPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	d, err := decodedForQuota[appsv1.Deployment](obj)
	if err != nil {
		return nil, err
	}
	defaultReplicas(&d.Spec.Replicas)
	ps, err := templatePodSet(ctx, kueue.DefaultPodSetName, *d.Spec.Replicas, &d.Spec.Template)
	if err != nil {
		return nil, err
	}
	return []kueue.PodSet{ps}, nil
}

func statefulSetPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	sts, err := decodedForQuota[appsv1.StatefulSet](obj)
	if err != nil {
		return nil, err
	}
	defaultReplicas(&sts.Spec.Replicas)
	ps, err := templatePodSet(ctx, kueue.DefaultPodSetName, *sts.Spec.Replicas, &sts.Spec.Template)
	if err != nil {
		return nil, err
	}
	return []kueue.PodSet{ps}, nil
}

// Pod set names Kueue's LeaderWorkerSet reconciler gives a group with a leader
// template (unexported in Kueue).
const (
	lwsLeaderPodSetName kueue.PodSetReference = "leader"
	lwsWorkerPodSetName kueue.PodSetReference = "worker"
)

// leaderWorkerSetPodSets mirrors Kueue's (unexported) leaderworkerset podSets:
// with a leader template, "leader" ×1 and "worker" ×(size-1) per group, else
// "main" ×size; every count is then multiplied by the number of groups.
func leaderWorkerSetPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	lws, err := decodedForQuota[leaderworkersetv1.LeaderWorkerSet](obj)
	if err != nil {
		return nil, err
	}
	defaultLeaderWorkerSet(lws)
	groups, size := *lws.Spec.Replicas, *lws.Spec.LeaderWorkerTemplate.Size
	if groups < 0 || size < 1 {
		return nil, fmt.Errorf("replicas %d and size %d: want replicas ≥ 0 and size ≥ 1", groups, size)
	}
	var out []kueue.PodSet
	workerName, workersPerGroup := kueue.DefaultPodSetName, size
	if leader := lws.Spec.LeaderWorkerTemplate.LeaderTemplate; leader != nil {
		workerName, workersPerGroup = lwsWorkerPodSetName, size-1
		ps, err := templatePodSet(ctx, lwsLeaderPodSetName, groups, leader)
		if err != nil {
			return nil, err
		}
		out = append(out, ps)
	}
	workers, ok := mulNonNegative(int64(groups), int64(workersPerGroup))
	if !ok || workers > math.MaxInt32 {
		return nil, fmt.Errorf("replicas %d × size %d overflows", groups, size)
	}
	ps, err := templatePodSet(ctx, workerName, int32(workers), &lws.Spec.LeaderWorkerTemplate.WorkerTemplate)
	if err != nil {
		return nil, err
	}
	return append(out, ps), nil
}

func jobSetPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	js, err := decodedForQuota[jobsetapi.JobSet](obj)
	if err != nil {
		return nil, err
	}
	defaultJobSet(obj, js)
	return (*kueuejobset.JobSet)(js).PodSets(ctx, nil)
}

func rayClusterPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	rc, err := decoded[rayv1.RayCluster](obj)
	if err != nil {
		return nil, err
	}
	defaultRayClusterSpec(&rc.Spec)
	return (*raycluster.RayCluster)(rc).PodSets(ctx, nil)
}

// rayJobPodSets: see podSetBuilders for why this is not the RayJob adapter. A
// RayJob without rayClusterSpec runs on an existing cluster (clusterSelector),
// creates no Ray pods of its own and is not one Kueue admits; it has no pod sets.
// rayJobPodSets is Kueue's RayJob adapter: the cluster's head and worker
// groups, and the "submitter" pod set in K8sJobMode (the CRD's default). The
// adapter reads a live RayCluster only for a workload-sliced, autoscaling job
// that already has one; the status is cleared so it never does here (its pod
// sets come from the spec, as at creation).
func rayJobPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	rj, err := decoded[rayv1.RayJob](obj)
	if err != nil {
		return nil, err
	}
	if rj.Spec.RayClusterSpec == nil {
		return nil, nil
	}
	defaultRayJob(rj)
	rj.Status = rayv1.RayJobStatus{}
	return (*kueuerayjob.RayJob)(rj).PodSets(ctx, nil)
}

// rayServicePodSets: see podSetBuilders for why this is not the RayService adapter.
func rayServicePodSets(_ context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	rs, err := decoded[rayv1.RayService](obj)
	if err != nil {
		return nil, err
	}
	defaultRayClusterSpec(&rs.Spec.RayClusterSpec)
	return raycluster.BuildPodSets(&rs.Spec.RayClusterSpec, rs.Annotations)
}

func mpiJobPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	mj, err := decoded[kfmpi.MPIJob](obj)
	if err != nil {
		return nil, err
	}
	// The API server prunes a null replica spec; Kueue's adapter would
	// dereference it. Replicas default to 1 inside the adapter, as in the CRD.
	for t, spec := range mj.Spec.MPIReplicaSpecs {
		if spec == nil {
			delete(mj.Spec.MPIReplicaSpecs, t)
		}
	}
	return (*kueuempijob.MPIJob)(mj).PodSets(ctx, nil)
}

// kubeflowPodSets builds the podSetsFunc of a Kubeflow training-operator v1 job
// from its Kueue JobControl. Kueue's adapter skips null replica specs and
// defaults replicas to 1 like the training operator, so no defaults are needed;
// replica types in the wrong case are rejected by the training operator's
// validating webhook, and Kueue would not see them either.
func kubeflowPodSets[T any](control func(*T) kubeflowjob.KFJobControl) podSetsFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
		j, err := decoded[T](obj)
		if err != nil {
			return nil, err
		}
		return (&kubeflowjob.KubeflowJob{KFJobControl: control(j)}).PodSets(ctx, nil)
	}
}

// priorityClassFuncs are, for the kinds whose Kueue adapter chooses the
// workload's priority class itself (jobframework.JobWithPriorityClass: an
// MPIJob's or Kubeflow job's runPolicy.schedulingPolicy.priorityClass before
// its templates'), that adapter's choice. Kueue's ExtractPriority then uses
// it instead of the pod sets'. It decodes the object again, and runs only for
// these kinds and only without a WorkloadPriorityClass label.
var priorityClassFuncs = map[schema.GroupKind]func(*unstructured.Unstructured) (string, error){
	{Group: "kubeflow.org", Kind: "MPIJob"}: func(obj *unstructured.Unstructured) (string, error) {
		mj, err := decoded[kfmpi.MPIJob](obj)
		if err != nil {
			return "", err
		}
		return priorityClassOf((*kueuempijob.MPIJob)(mj)), nil
	},
	{Group: "kubeflow.org", Kind: "PyTorchJob"}: kubeflowPriorityClass(pytorchjobControl),
	{Group: "kubeflow.org", Kind: "TFJob"}:      kubeflowPriorityClass(tfjobControl),
	{Group: "kubeflow.org", Kind: "XGBoostJob"}: kubeflowPriorityClass(xgboostjobControl),
	{Group: "kubeflow.org", Kind: "PaddleJob"}:  kubeflowPriorityClass(paddlejobControl),
	{Group: "kubeflow.org", Kind: "JAXJob"}:     kubeflowPriorityClass(jaxjobControl),
}

// priorityClassOf takes the adapter as Kueue's reconciler does.
func priorityClassOf(j jobframework.JobWithPriorityClass) string { return j.PriorityClass() }

func kubeflowPriorityClass[T any](control func(*T) kubeflowjob.KFJobControl) func(*unstructured.Unstructured) (string, error) {
	return func(obj *unstructured.Unstructured) (string, error) {
		j, err := decoded[T](obj)
		if err != nil {
			return "", err
		}
		return priorityClassOf(&kubeflowjob.KubeflowJob{KFJobControl: control(j)}), nil
	}
}

// The Kueue JobControl of each Kubeflow v1 kind.

func pytorchjobControl(j *kftraining.PyTorchJob) kubeflowjob.KFJobControl {
	return (*pytorchjob.JobControl)(j)
}

func tfjobControl(j *kftraining.TFJob) kubeflowjob.KFJobControl {
	return (*tfjob.JobControl)(j)
}

func xgboostjobControl(j *kftraining.XGBoostJob) kubeflowjob.KFJobControl {
	return (*xgboostjob.JobControl)(j)
}

func paddlejobControl(j *kftraining.PaddleJob) kubeflowjob.KFJobControl {
	return (*paddlejob.JobControl)(j)
}

func jaxjobControl(j *kftraining.JAXJob) kubeflowjob.KFJobControl {
	return (*jaxjob.JobControl)(j)
}

// trainJobNodePodSetName is the replicated job Kubeflow Trainer runs the trainer
// nodes in (constants.Node in github.com/kubeflow/trainer/v2).
const trainJobNodePodSetName kueue.PodSetReference = "node"

// trainJobPodSets is Kueue's computation from the TrainJob's runtime (see
// trainJobRuntimePodSets) when o.Runtimes knows it, and the stand-in
// (trainJobStandInPodSets) otherwise: offline without the runtime, or while the
// runtime is not in the cluster (Kueue then creates no Workload and the
// TrainJob stays suspended).
func trainJobPodSets(ctx context.Context, obj *unstructured.Unstructured, o *Options) ([]kueue.PodSet, error) {
	tj, err := decoded[kftrainer.TrainJob](obj)
	if err != nil {
		return nil, err
	}
	if o.Runtimes != nil {
		ps, err := trainJobRuntimePodSets(ctx, tj, o.Runtimes)
		if !errors.Is(err, errNoRuntime) {
			return ps, err
		}
	}
	return trainJobStandInPodSets(tj), nil
}

// appWrapperPodSets calls Kueue's adapter, which infers pod sets from the wrapped
// components (or takes the declared ones). Status is never decoded, so a
// client-supplied status.componentStatus cannot stand in for the spec.
func appWrapperPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	aw, err := decoded[awv1beta2.AppWrapper](obj)
	if err != nil {
		return nil, err
	}
	for i := range aw.Spec.Components {
		if len(aw.Spec.Components[i].Template.Raw) == 0 {
			return nil, fmt.Errorf("spec.components[%d].template is empty", i)
		}
	}
	return (*kueueappwrapper.AppWrapper)(aw).PodSets(ctx, nil)
}

// sparkApplicationPodSets applies the Spark operator's own defaults (its
// mutating webhook applies the same ones: executor instances 1, driver and
// executor memory 1g, …) before Kueue's adapter builds the driver and executor
// pod sets from them.
func sparkApplicationPodSets(ctx context.Context, obj *unstructured.Unstructured, _ *Options) ([]kueue.PodSet, error) {
	app, err := decoded[sparkv1beta2.SparkApplication](obj)
	if err != nil {
		return nil, err
	}
	sparkv1beta2.SetSparkApplicationDefaults(app)
	return (*kueuespark.SparkApplication)(app).PodSets(ctx, nil)
}
