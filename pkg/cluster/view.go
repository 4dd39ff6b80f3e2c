// Package cluster is what an admission step may know about the cluster.
//
// Steps read the cluster only through View, so the same pipeline runs in the server
// (backed by controller-runtime's informer cache: no API call on the request path)
// and offline (backed by a Snapshot of objects read from files or listed once).
package cluster

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// View is a read-only, in-memory view of the objects admission decisions depend on.
// Implementations must not call the API server: they are consulted on every request.
// Returned objects are shared; callers must not modify them.
type View interface {
	// Namespace returns a namespace by name.
	Namespace(name string) (*corev1.Namespace, bool)
	// QueuesKnown reports whether Kueue's kinds (LocalQueue, ClusterQueue,
	// ResourceFlavor, Cohort) can be read. While they cannot (Kueue's CRDs are
	// not installed, or serve another version), a missing queue means
	// "unknown", not "does not exist".
	QueuesKnown() bool
	// KueueServing reports whether Kueue is serving: its CRDs are served
	// (QueuesKnown) and its workload mutating webhooks are registered. While
	// it is not, nothing but kueue-guard suspends a new queued workload.
	KueueServing() bool
	// KueueWebhooksFirst names the mutating webhook configurations of Kueue's
	// workload webhooks that the API server calls before kueue-guard's, without
	// reinvoking them (kueueorder.Check): Kueue's webhook then sees a workload
	// before kueue-guard labels it, and holds nothing. Empty when the order is
	// right or unknown.
	KueueWebhooksFirst() []string
	// KueueDefaultQueueRemembered reports, while Kueue's queues cannot be read
	// (QueuesKnown is false), whether the namespace had Kueue's LocalQueue
	// named "default" when they last could: its workloads are still owed that
	// queue.
	KueueDefaultQueueRemembered(namespace string) bool
	// LocalQueue returns a LocalQueue by namespace and name.
	LocalQueue(namespace, name string) (*kueue.LocalQueue, bool)
	// ClusterQueue returns a ClusterQueue by name.
	ClusterQueue(name string) (*kueue.ClusterQueue, bool)
	// KueueControllers lists the Kueue controller managers running in the cluster.
	KueueControllers() []ControllerRef
	// KueueFrameworks returns the integrations Kueue's own Configuration enables
	// (frameworks and externalFrameworks); known is false when the Configuration
	// cannot be found, so callers never guess.
	KueueFrameworks() (frameworks []string, known bool)
	// KueueConfig is Kueue's Configuration as kueue-guard follows it, with
	// Kueue's defaults; known is false when it cannot be found or read.
	KueueConfig() (cfg *KueueConfig, known bool)
	// ScaleTarget returns a queued workload whose scale subresource is under
	// admission (a kind with integrations.Integration.ScaleJudged whose
	// effective queue label, its own or its pod template's, is set), so that a
	// scale is judged as an update of the workload. ok is false for an
	// unqueued workload: Kueue does not manage it, and there is nothing to
	// judge. err is set when the view cannot tell (its informer for the kind
	// is still starting, or it has not seen the object of that uid yet, when
	// uid is set): the caller must not guess.
	ScaleTarget(gk schema.GroupKind, namespace, name string, uid types.UID) (obj *unstructured.Unstructured, ok bool, err error)
	// ScaleReplicasPath is where a scale of a kind sets the replicas:
	// spec.replicas for the built-in kinds, the specReplicasPath its CRD
	// declares for the others; ok is false when the CRD declares none or
	// cannot be read.
	ScaleReplicasPath(in *integrations.Integration) (path []string, ok bool)
	// Parent returns a cached object of a kind Kueue manages as a whole
	// (ParentKind), for Kueue's ancestry walk: at least its identity, queue
	// label, controller owner and what Kueue may ignore it by; ok is false
	// when there is none. err is set while the view cannot tell (its informer
	// is starting).
	Parent(gvk schema.GroupVersionKind, namespace, name string) (obj *unstructured.Unstructured, ok bool, err error)
	// LimitRanges lists a namespace's LimitRanges, and RuntimeClass returns a
	// RuntimeClass: Kueue adjusts pod requests by them before it charges quota
	// (workload.Resources).
	LimitRanges(namespace string) []corev1.LimitRange
	// ClusterQueueCapacity is the most a ClusterQueue can ever give, per flavor
	// and resource, over its cohort tree (see Capacities); known is false when
	// it cannot be computed.
	ClusterQueueCapacity(name string) (caps []Capacity, known bool)
	RuntimeClass(name string) (*nodev1.RuntimeClass, bool)
	// TrainingRuntime returns the ClusterTrainingRuntime (namespace empty) or
	// TrainingRuntime a TrainJob names: Kueue builds the TrainJob's pod sets
	// from it (workload.TrainingRuntimes).
	TrainingRuntime(kind, namespace, name string) (*unstructured.Unstructured, bool)
	// ResourceClaimTemplate returns a ResourceClaimTemplate a pod names: Kueue
	// charges the devices it claims (workload.ClaimTemplates).
	ResourceClaimTemplate(namespace, name string) (*resourcev1.ResourceClaimTemplate, bool)
	// DeviceClasses lists the cluster's DeviceClasses: Kueue charges an
	// extended resource one backs (spec.extendedResourceName) as a DRA device.
	DeviceClasses() []resourcev1.DeviceClass
	// SchedulingGeneration moves whenever what Kueue's scheduler reads
	// changes (SchedulingState), so that a simulation rebuilds its view only
	// then; known is false while it cannot be read.
	SchedulingGeneration() (generation int64, known bool)
	// SchedulingState lists what Kueue's scheduler reads: its objects, its
	// Workloads and the priority classes.
	SchedulingState() (*SchedulingState, error)
}

// ControllerRef identifies a running Kueue controller manager by its top-level
// object (a Deployment in every install we know of).
type ControllerRef struct {
	Kind, Namespace, Name string
	// Version is the Kueue release it says it runs (its image tag or chart
	// labels; "" when neither names one): shown and compared with the
	// release kueue-guard is tested against, never used to admit.
	Version string
}

// String renders "Deployment kueue-system/kueue-controller-manager".
func (r ControllerRef) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// SummaryOptions are Kueue's accounting inputs a view holds: the namespace's
// LimitRanges and RuntimeClasses, the training runtimes TrainJobs name, and
// Kueue's resources configuration.
func SummaryOptions(view View) workload.Options {
	o := workload.Options{Resources: view, Runtimes: view, Claims: view}
	if cfg, ok := view.KueueConfig(); ok {
		o.Kueue = cfg.Resources
	}
	return o
}
