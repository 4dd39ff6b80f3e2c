// Package integrations is the catalog of workload kinds that Kueue integrates with.
//
// It is the single source of truth for which kinds kueue-guard mutates and validates,
// which Kueue framework manages each kind, where a kind keeps its queue label, and which
// install profiles support it. The webhook handlers, the Helm chart's webhook rules, the
// offline reviewer and the tests all read this list instead of retyping it.
package integrations

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"
	podconstants "sigs.k8s.io/kueue/pkg/controller/jobs/pod/constants"
)

// Kueue's own label keys, from Kueue's constants package: they are Kueue's API.
const (
	// QueueNameLabel routes a workload to a LocalQueue in its namespace.
	QueueNameLabel = kueueconstants.QueueLabel
	// PriorityClassLabel names the WorkloadPriorityClass of a workload.
	PriorityClassLabel = kueueconstants.WorkloadPriorityClassLabel
)

// KueueGroup is Kueue's API group, and KueueAPIVersions the versions of it
// kueue-guard reads, the newest first: where both are served, the first.
const KueueGroup = "kueue.x-k8s.io"

// KueueAPIVersions: see KueueGroup.
var KueueAPIVersions = []string{"v1beta2", "v1beta1"}

// Integration describes one workload kind Kueue can manage.
type Integration struct {
	// GVK is the served group, version and kind the webhooks register for.
	GVK schema.GroupVersionKind
	// Resource is the plural resource name used in webhook rules.
	Resource string
	// Framework is Kueue's integration name (as in Kueue's Configuration
	// integrations.frameworks). It is empty for kinds Kueue does not manage itself
	// but whose children it does (CronJob).
	Framework string
	// ChildFramework is, for a kind that is not a framework itself, the framework
	// of the objects it creates (CronJob → batch/job); support is judged on it.
	ChildFramework string
	// QueueLabelPath is the path of the metadata.labels map that holds the queue
	// label; annotations are written beside it.
	QueueLabelPath []string
	// Managed reports whether a managed install supports this integration.
	Managed bool
	// Alternative is what to use instead where the integration is unsupported.
	Alternative string
	// Suspension says how Kueue tells that a workload of this kind is suspended:
	// its queue may change only then.
	Suspension Suspension
	// ScaleJudged marks kinds with a scale subresource that the validating
	// webhook judges as an update of the queued workload, so that `kubectl
	// scale` (or an autoscaler) meets the same policies as editing
	// spec.replicas: Kueue sizes a StatefulSet's or LeaderWorkerSet's pod
	// groups from the replica count, and a Deployment's total is what a
	// workload-wide policy caps; a PyTorchJob's, PaddleJob's or JAXJob's
	// scale sets its Worker replicas (the path its CRD declares, read at run
	// time), which Kueue charges. Kueue's own webhooks do not see /scale.
	// (A ReplicaSet is not a kind Kueue queues: its pods are judged one by one
	// as they are created, which is how Kueue admits them.)
	ScaleJudged bool
	// ScaleReplicas is where the scale subresource of the CRD version Kueue
	// integrates puts the replicas (its specReplicasPath; spec.replicas for
	// the built-in kinds). The server reads the cluster's CRD instead; this is
	// for a view without CRDs (a review's snapshot). A test checks it against
	// the CRDs.
	ScaleReplicas []string
	// TemplateQueue marks kinds whose pods Kueue admits as pods (Deployment) or
	// pod groups (StatefulSet, LeaderWorkerSet): the queue and priority labels
	// Kueue acts on are the pods', so a label in the pod template counts as the
	// workload's when the object itself has none.
	TemplateQueue bool
	// PodTemplates are the metadata paths of the kind's pod templates where
	// they sit at a fixed place (spec.template.metadata; not in a list or a
	// map of roles): where the API server's CEL twins, which cannot walk the
	// object as the webhook does, read a template's labels and annotations.
	PodTemplates [][]string
	// PodBased marks the kinds Kueue manages through its pod integration (Pod,
	// Deployment, StatefulSet, LeaderWorkerSet): Kueue leaves them alone
	// entirely in namespaces outside its managedJobsNamespaceSelector.
	PodBased bool
	// PodGroups marks the kinds whose pods Kueue admits together, as pod
	// groups (StatefulSet, LeaderWorkerSet): each pod is part of the workload
	// (its owner is a kind Kueue manages) and Kueue's webhook gates it as a
	// member of its group. Growing one adds pods only Kueue would hold.
	PodGroups bool
	// Ignorable marks the kinds Kueue may leave alone whatever their queue (a
	// RayJob on an existing cluster, spec.clusterSelector): their operator's
	// children are part of a workload only when Kueue manages the parent, so
	// they are not skipped by the webhooks' match condition, and the server
	// looks the parent up (cluster.View.Parent).
	Ignorable bool
}

// Suspension describes, as data, how Kueue decides that a workload is suspended
// (not running), the state in which Kueue lets its queue-name change.
type Suspension struct {
	// Field is a boolean field that is true while the workload is suspended.
	Field []string
	// NoReadyReplicas marks kinds (Deployment, StatefulSet, LeaderWorkerSet) that
	// Kueue treats as suspended while the old object's status.readyReplicas is 0.
	NoReadyReplicas bool
	// SchedulingGate marks Pods, suspended while Kueue's admission gate is set.
	SchedulingGate string
	// QueueMutable marks kinds whose queue may always change (a CronJob's label
	// only affects the Jobs it creates later).
	QueueMutable bool
	// QueueImmutable marks kinds whose queue Kueue never lets change, running or
	// not (LeaderWorkerSet).
	QueueImmutable bool
}

// KueueAdmissionGate is the scheduling gate Kueue puts on pods it has not admitted.
const KueueAdmissionGate = podconstants.SchedulingGateName

var (
	specSuspend      = Suspension{Field: []string{"spec", "suspend"}}
	runPolicySuspend = Suspension{Field: []string{"spec", "runPolicy", "suspend"}}
	noReadyReplicas  = Suspension{NoReadyReplicas: true}
)

// Key is the "group/kind" form used in messages and lookups.
func (i *Integration) Key() string { return GroupKindKey(i.GVK.GroupKind()) }

// EffectiveFramework is the Kueue framework that decides whether Kueue will
// manage objects of this kind.
func (i *Integration) EffectiveFramework() string {
	if i.Framework != "" {
		return i.Framework
	}
	return i.ChildFramework
}

// EnabledBy reports whether a Kueue Configuration's frameworks (its
// integrations.frameworks, then externalFrameworks) enable the integration:
// by its framework name, or in the external "Kind.version.group" form.
func (i *Integration) EnabledBy(frameworks []string) bool {
	external := i.GVK.Kind + "." + i.GVK.Version + "." + i.GVK.Group
	for _, f := range frameworks {
		if f == i.EffectiveFramework() || f == external {
			return true
		}
	}
	return false
}

// LabelsPath is QueueLabelPath followed by "labels".
func (i *Integration) LabelsPath() []string { return append(slices.Clone(i.QueueLabelPath), "labels") }

// AnnotationsPath is QueueLabelPath followed by "annotations".
func (i *Integration) AnnotationsPath() []string {
	return append(slices.Clone(i.QueueLabelPath), "annotations")
}

var (
	topLevelMeta = []string{"metadata"}
	podTemplate  = [][]string{{"spec", "template", "metadata"}}
)

const (
	useTrainJob = "TrainJob (trainer.kubeflow.org/v1alpha1)"
	useJobSet   = "JobSet (jobset.x-k8s.io/v1alpha2)"
	useSparkJob = "a Job (batch/v1) running spark-submit"
)

// specReplicas is where a scale puts the replicas of the built-in kinds and of
// the CRDs that follow them.
var specReplicas = []string{"spec", "replicas"}

// catalog lists every kind. Order is stable and is the order of generated rules.
var catalog = []Integration{
	{GVK: gvk("batch", "v1", "Job"), Resource: "jobs", Framework: "batch/job", Managed: true, Suspension: specSuspend,
		PodTemplates: podTemplate},
	{GVK: gvk("batch", "v1", "CronJob"), Resource: "cronjobs", ChildFramework: "batch/job", Managed: true,
		Suspension: Suspension{QueueMutable: true}, QueueLabelPath: []string{"spec", "jobTemplate", "metadata"},
		PodTemplates: [][]string{{"spec", "jobTemplate", "spec", "template", "metadata"}}},
	{GVK: gvk("", "v1", "Pod"), Resource: "pods", Framework: "pod", Managed: true,
		Suspension: Suspension{SchedulingGate: KueueAdmissionGate}, PodBased: true},
	{GVK: gvk("apps", "v1", "Deployment"), Resource: "deployments", Framework: "deployment", Managed: true, Suspension: noReadyReplicas, TemplateQueue: true,
		PodTemplates: podTemplate, ScaleJudged: true, ScaleReplicas: specReplicas, PodBased: true},
	{GVK: gvk("apps", "v1", "StatefulSet"), Resource: "statefulsets", Framework: "statefulset", Managed: true, Suspension: noReadyReplicas, TemplateQueue: true,
		PodTemplates: podTemplate, ScaleJudged: true, ScaleReplicas: specReplicas, PodBased: true, PodGroups: true},
	{GVK: gvk("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"), Resource: "leaderworkersets",
		Framework: "leaderworkerset.x-k8s.io/leaderworkerset", Alternative: useJobSet, Suspension: Suspension{QueueImmutable: true}, TemplateQueue: true,
		PodTemplates: [][]string{{"spec", "leaderWorkerTemplate", "leaderTemplate", "metadata"},
			{"spec", "leaderWorkerTemplate", "workerTemplate", "metadata"}},
		ScaleJudged: true, ScaleReplicas: specReplicas, PodBased: true, PodGroups: true},
	{GVK: gvk("jobset.x-k8s.io", "v1alpha2", "JobSet"), Resource: "jobsets", Framework: "jobset.x-k8s.io/jobset", Managed: true, Suspension: specSuspend},
	{GVK: gvk("ray.io", "v1", "RayJob"), Resource: "rayjobs", Framework: "ray.io/rayjob", Managed: true, Suspension: specSuspend, Ignorable: true},
	{GVK: gvk("ray.io", "v1", "RayCluster"), Resource: "rayclusters", Framework: "ray.io/raycluster", Managed: true, Suspension: specSuspend},
	{GVK: gvk("ray.io", "v1", "RayService"), Resource: "rayservices", Framework: "ray.io/rayservice", Managed: true,
		Suspension: Suspension{Field: []string{"spec", "rayClusterConfig", "suspend"}}},
	{GVK: gvk("kubeflow.org", "v2beta1", "MPIJob"), Resource: "mpijobs", Framework: "kubeflow.org/mpijob", Managed: true, Suspension: runPolicySuspend},
	{GVK: gvk("kubeflow.org", "v1", "PyTorchJob"), Resource: "pytorchjobs", Framework: "kubeflow.org/pytorchjob", Alternative: useTrainJob, Suspension: runPolicySuspend,
		ScaleJudged: true, ScaleReplicas: []string{"spec", "pytorchReplicaSpecs", "Worker", "replicas"}},
	{GVK: gvk("kubeflow.org", "v1", "TFJob"), Resource: "tfjobs", Framework: "kubeflow.org/tfjob", Alternative: useTrainJob, Suspension: runPolicySuspend},
	{GVK: gvk("kubeflow.org", "v1", "XGBoostJob"), Resource: "xgboostjobs", Framework: "kubeflow.org/xgboostjob", Alternative: useTrainJob, Suspension: runPolicySuspend},
	{GVK: gvk("kubeflow.org", "v1", "PaddleJob"), Resource: "paddlejobs", Framework: "kubeflow.org/paddlejob", Alternative: useTrainJob, Suspension: runPolicySuspend,
		ScaleJudged: true, ScaleReplicas: []string{"spec", "paddleReplicaSpecs", "Worker", "replicas"}},
	{GVK: gvk("kubeflow.org", "v1", "JAXJob"), Resource: "jaxjobs", Framework: "kubeflow.org/jaxjob", Alternative: useTrainJob, Suspension: runPolicySuspend,
		ScaleJudged: true, ScaleReplicas: []string{"spec", "jaxReplicaSpecs", "Worker", "replicas"}},
	{GVK: gvk("trainer.kubeflow.org", "v1alpha1", "TrainJob"), Resource: "trainjobs", Framework: "trainer.kubeflow.org/trainjob", Managed: true, Suspension: specSuspend},
	{GVK: gvk("workload.codeflare.dev", "v1beta2", "AppWrapper"), Resource: "appwrappers",
		Framework: "workload.codeflare.dev/appwrapper", Alternative: useJobSet, Suspension: specSuspend},
	{GVK: gvk("sparkoperator.k8s.io", "v1beta2", "SparkApplication"), Resource: "sparkapplications",
		Framework: "sparkoperator.k8s.io/sparkapplication", Alternative: useSparkJob, Suspension: specSuspend},
}

// byGroupKind indexes the catalog; built once, never mutated.
var byGroupKind = func() map[schema.GroupKind]*Integration {
	m := make(map[schema.GroupKind]*Integration, len(catalog))
	for i := range catalog {
		if catalog[i].QueueLabelPath == nil {
			catalog[i].QueueLabelPath = topLevelMeta
		}
		m[catalog[i].GVK.GroupKind()] = &catalog[i]
	}
	return m
}()

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// All returns the catalog in its stable order. Callers must not modify the entries.
func All() []*Integration {
	out := make([]*Integration, len(catalog))
	for i := range catalog {
		out[i] = &catalog[i]
	}
	return out
}

// Lookup finds the integration for a group and kind, whatever the version: the
// webhooks register with matchPolicy Equivalent, so other served versions of the
// same kind arrive here too.
func Lookup(gk schema.GroupKind) (*Integration, bool) {
	i, ok := byGroupKind[gk]
	return i, ok
}

// LookupFramework finds the kind a Kueue framework name (as in Kueue's
// integrations.frameworks) manages.
func LookupFramework(name string) (*Integration, bool) {
	for i := range catalog {
		if catalog[i].Framework == name {
			return &catalog[i], true
		}
	}
	return nil, false
}

// ScaleJudged returns the integrations whose scale subresource is judged, in
// catalog order: the webhook rules and the server's cache both read it.
func ScaleJudged() []*Integration { return where(func(i *Integration) bool { return i.ScaleJudged }) }

// where lists the integrations keep accepts, in catalog order.
func where(keep func(*Integration) bool) []*Integration {
	var out []*Integration
	for i := range catalog {
		if keep(&catalog[i]) {
			out = append(out, &catalog[i])
		}
	}
	return out
}

// LookupResource finds the integration for a group and plural resource name,
// for requests on a subresource (whose kind is the subresource's, e.g. Scale).
func LookupResource(gr schema.GroupResource) (*Integration, bool) {
	for i := range catalog {
		if catalog[i].GVK.Group == gr.Group && catalog[i].Resource == gr.Resource {
			return &catalog[i], true
		}
	}
	return nil, false
}

// GroupKindKey renders a GroupKind as "kind.group" the way kubectl names resources
// ("Job.batch", "Pod").
func GroupKindKey(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// Frameworks returns every Kueue framework name the catalog knows, sorted.
func Frameworks() []string {
	seen := map[string]bool{}
	for i := range catalog {
		if f := catalog[i].Framework; f != "" {
			seen[f] = true
		}
	}
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// WebhookRule is one admission rule: the resources of one API group and version.
type WebhookRule struct {
	Group     string
	Version   string
	Resources []string
}

// WebhookRules groups the catalog's resources by group and version, in catalog
// order. The chart's webhook configurations are generated from it.
func WebhookRules() []WebhookRule {
	var rules []WebhookRule
	idx := map[string]int{}
	for i := range catalog {
		gv := catalog[i].GVK.GroupVersion().String()
		j, ok := idx[gv]
		if !ok {
			j = len(rules)
			idx[gv] = j
			rules = append(rules, WebhookRule{Group: catalog[i].GVK.Group, Version: catalog[i].GVK.Version})
		}
		rules[j].Resources = append(rules[j].Resources, catalog[i].Resource)
	}
	return rules
}

// Owner is a controller owner's apiVersion and kind, as an ownerReference
// names it.
type Owner struct {
	APIVersion, Kind string
}

// IsManagedOwner reports whether a controller owner of this apiVersion and kind
// makes its children part of one workload that Kueue manages as a whole (a Job's
// pods, a JobSet's Jobs, a StatefulSet's pods): a catalog kind with a Kueue
// framework, at the version the catalog serves, matched exactly as Kueue matches
// owners. A CronJob's Jobs are top-level (Kueue manages each Job), and so are the
// children of controllers Kueue does not manage as a whole: a ReplicaSet's,
// DaemonSet's or ReplicationController's pods are plain pods to Kueue, and so to
// kueue-guard.
func IsManagedOwner(apiVersion, kind string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false
	}
	i, ok := byGroupKind[gv.WithKind(kind).GroupKind()]
	return ok && i.Framework != "" && i.GVK.Version == gv.Version
}

// ManagedOwners lists every owner IsManagedOwner accepts, in catalog order, so
// that the webhook configurations can skip such children before calling the
// server.
func ManagedOwners() []Owner {
	var out []Owner
	for i := range catalog {
		if catalog[i].Framework != "" {
			out = append(out, Owner{APIVersion: catalog[i].GVK.GroupVersion().String(), Kind: catalog[i].GVK.Kind})
		}
	}
	return out
}

// Ignorables lists the kinds Kueue may ignore whatever their queue
// (Integration.Ignorable).
func Ignorables() []*Integration { return where(func(i *Integration) bool { return i.Ignorable }) }

// ParseGroupKind parses the group of an apiVersion string ("batch/v1" → "batch").
func ParseGroupKind(apiVersion, kind string) schema.GroupKind {
	group := ""
	if g, _, found := strings.Cut(apiVersion, "/"); found {
		group = g
	}
	return schema.GroupKind{Group: group, Kind: kind}
}
