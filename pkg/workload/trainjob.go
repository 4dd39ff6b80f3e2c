package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	kftrainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kftrainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	kftrainerruntimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	kftrainerjobset "github.com/kubeflow/trainer/v2/pkg/runtime/framework/plugins/jobset"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetapplyapi "sigs.k8s.io/jobset/client-go/applyconfiguration/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuejobset "sigs.k8s.io/kueue/pkg/controller/jobs/jobset"
)

// TrainingRuntimes finds the runtime a TrainJob names, as Kueue does before it
// builds the TrainJob's pod sets: a ClusterTrainingRuntime by name (namespace
// empty) or a TrainingRuntime in the TrainJob's namespace. The server's
// informer view and the reviewer's snapshot provide it.
type TrainingRuntimes interface {
	TrainingRuntime(kind, namespace, name string) (*unstructured.Unstructured, bool)
}

// The runtime kinds a TrainJob's spec.runtimeRef may name (the CRD defaults an
// unset apiGroup and kind to the cluster-scoped one).
const (
	ClusterTrainingRuntimeKind = kftrainer.ClusterTrainingRuntimeKind
	TrainingRuntimeKind        = kftrainer.TrainingRuntimeKind
)

// TrainingRuntimeGVKs are the runtime kinds at the version this build reads.
var TrainingRuntimeGVKs = []schema.GroupVersionKind{
	kftrainer.GroupVersion.WithKind(ClusterTrainingRuntimeKind),
	kftrainer.GroupVersion.WithKind(TrainingRuntimeKind),
}

// trainerRuntime is Kubeflow Trainer's TrainingRuntime with its plugin
// framework (the same one Kueue's manager builds), made once. Only its
// RuntimeInfo is called, which reads nothing from the cluster; the client it is
// built with answers only what the plugins' constructors ask (a scheme and a
// REST mapper), so nothing on this path can reach an API server.
var trainerRuntime = sync.OnceValues(func() (kftrainerruntime.Runtime, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kftrainer.AddToScheme, jobsetapi.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	c := offlineClient{scheme: scheme, mapper: mapper}
	return kftrainerruntimecore.NewTrainingRuntime(context.Background(), c, noIndexer{}, nil)
})

// offlineClient is the client the trainer's plugins are constructed with. The
// embedded client is never set: a call RuntimeInfo was not expected to make
// panics, which computePodSets turns into an error.
type offlineClient struct {
	client.Client
	scheme *runtime.Scheme
	mapper meta.RESTMapper
}

func (c offlineClient) Scheme() *runtime.Scheme     { return c.scheme }
func (c offlineClient) RESTMapper() meta.RESTMapper { return c.mapper }
func (c offlineClient) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("kueue-guard reads no cluster object while building a TrainJob's pod sets")
}

// noIndexer accepts the field indexes the trainer registers for its
// controllers; nothing here lists by them.
type noIndexer struct{}

func (noIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

// errNoRuntime says the runtime a TrainJob names is not known (not in the
// cache, or the runtime CRDs are not served): Kueue cannot build the TrainJob's
// Workload either, so the job does not run until the runtime exists.
var errNoRuntime = errors.New("training runtime not found")

// trainJobRuntimePodSets is Kueue's computation of a TrainJob's pod sets
// (trainjob.getChildJobSet and podSets in Kueue v0.17, whose glue is
// unexported): the runtime's JobSet template with the TrainJob's runtime
// patches and ML policy applied by the trainer's own runtime framework, the
// replicated jobs' parallelism and completions set from the computed pod-set
// counts, the initializer and trainer overrides applied by the trainer's JobSet
// builder, and then Kueue's JobSet adapter.
func trainJobRuntimePodSets(ctx context.Context, tj *kftrainer.TrainJob, runtimes TrainingRuntimes) ([]kueue.PodSet, error) {
	ref := tj.Spec.RuntimeRef
	group, kind := ptr.Deref(ref.APIGroup, kftrainer.GroupVersion.Group), ptr.Deref(ref.Kind, ClusterTrainingRuntimeKind)
	if group != kftrainer.GroupVersion.Group || (kind != ClusterTrainingRuntimeKind && kind != TrainingRuntimeKind) {
		return nil, fmt.Errorf("spec.runtimeRef: unsupported runtime %s", schema.GroupKind{Group: group, Kind: kind})
	}
	namespace := ""
	if kind == TrainingRuntimeKind {
		namespace = tj.Namespace
	}
	u, ok := runtimes.TrainingRuntime(kind, namespace, ref.Name)
	if !ok {
		return nil, fmt.Errorf("%w: %s %q", errNoRuntime, kind, ref.Name)
	}
	var rt struct {
		Spec kftrainer.TrainingRuntimeSpec `json:"spec"`
	}
	if err := decodeInto(u, &rt); err != nil {
		return nil, fmt.Errorf("reading %s %q: %w", kind, ref.Name, err)
	}
	r, err := trainerRuntime()
	if err != nil {
		return nil, fmt.Errorf("internal error: starting the trainer runtime framework: %w", err)
	}
	info, err := r.RuntimeInfo(tj, rt.Spec.Template, rt.Spec.MLPolicy, rt.Spec.PodGroupPolicy)
	if err != nil {
		return nil, fmt.Errorf("applying %s %q: %w", kind, ref.Name, err)
	}
	spec, ok := kftrainerruntime.TemplateSpecApply[jobsetapplyapi.JobSetSpecApplyConfiguration](info)
	if !ok {
		return nil, fmt.Errorf("%s %q: its template is not a JobSet", kind, ref.Name)
	}
	for i, ps := range info.TemplateSpec.PodSets {
		if ps.Count != nil && i < len(spec.ReplicatedJobs) && spec.ReplicatedJobs[i].Template != nil && spec.ReplicatedJobs[i].Template.Spec != nil {
			spec.ReplicatedJobs[i].Template.Spec.Parallelism = ps.Count
			spec.ReplicatedJobs[i].Template.Spec.Completions = ps.Count
		}
	}
	built := kftrainerjobset.NewBuilder(jobsetapplyapi.JobSet(tj.Name, tj.Namespace).WithSpec(spec)).
		Initializer(tj).Trainer(info, tj).PodLabels(info.Scheduler.PodLabels).Build()
	raw, err := json.Marshal(built)
	if err != nil {
		return nil, err
	}
	js := &jobsetapi.JobSet{}
	if err := json.Unmarshal(raw, js); err != nil {
		return nil, err
	}
	return (*kueuejobset.JobSet)(js).PodSets(ctx, nil)
}

// trainJobStandInPodSets is what a TrainJob is counted as when its runtime is
// not known: one pod set "node" of spec.trainer.numNodes (default 1) pods
// requesting spec.trainer.resourcesPerNode.
func trainJobStandInPodSets(tj *kftrainer.TrainJob) []kueue.PodSet {
	container := corev1.Container{Name: string(trainJobNodePodSetName)}
	count := int32(1)
	if t := tj.Spec.Trainer; t != nil {
		count = ptr.Deref(t.NumNodes, 1)
		if t.ResourcesPerNode != nil {
			container.Resources = *t.ResourcesPerNode.DeepCopy()
		}
	}
	return []kueue.PodSet{{
		Name:     trainJobNodePodSetName,
		Count:    count,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
	}}
}
