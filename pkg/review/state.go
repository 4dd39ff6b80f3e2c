package review

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta1 "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// Where the cluster state comes from, as reports name it.
const (
	// StateNone: no cluster state was given; only the manifests' own Namespaces
	// and queues are known, everything else is "unknown".
	StateNone = "none"
	// StateFile: a --cluster-state file.
	StateFile = "file"
	// StateLive: one read-only listing of a live cluster (--live-cluster).
	StateLive = "live"
)

// kueueGroup is Kueue's API group.
const kueueGroup = integrations.KueueGroup

// namespaceNameLabel is set by the API server on every Namespace; namespace
// selectors (the configuration's defaulting rules) may match on it.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// State is the cluster the review assumes: a cluster.Snapshot for the pipeline,
// plus what explanations need and the pipeline does not hold (ResourceFlavors,
// WorkloadPriorityClasses), and whether the state is authoritative. Without a
// cluster state, an object absent from it is unknown, not missing: the reviewer
// must never claim a queue does not exist when it simply was not told.
type State struct {
	// Snapshot is the view the pipeline reads.
	Snapshot *cluster.Snapshot
	// Source is StateNone, StateFile or StateLive.
	Source string
	// Where is the state file's path or the live cluster's server.
	Where string
	// Notes are remarks about the state itself (fields or kinds it ignored).
	Notes []string

	flavors         map[string]*kueue.ResourceFlavor
	priorityClasses map[string]*kueue.WorkloadPriorityClass
	// workloads and podPriorities are what simulate reads besides: Kueue's
	// Workloads and the pods' PriorityClasses' values.
	workloads     []kueue.Workload
	podPriorities map[string]int32
	// fromManifests records objects that joined the state from the reviewed
	// manifests, keyed by kind/namespace/name.
	fromManifests map[string]bool
}

// NewState is an empty state: StateNone until objects of a cluster are added.
func NewState(kueueNamespace string) *State {
	snap, _ := cluster.NewSnapshot()
	snap.SetKueueNamespace(kueueNamespace)
	return &State{Snapshot: snap, Source: StateNone, flavors: map[string]*kueue.ResourceFlavor{},
		priorityClasses: map[string]*kueue.WorkloadPriorityClass{}, fromManifests: map[string]bool{}, podPriorities: map[string]int32{}}
}

// Known reports whether the state is a cluster's (a file or a live listing): only
// then is an object absent from it really missing.
func (s *State) Known() bool { return s.Source != StateNone }

// ResourceFlavor returns a ResourceFlavor by name.
func (s *State) ResourceFlavor(name string) (*kueue.ResourceFlavor, bool) {
	rf, ok := s.flavors[name]
	return rf, ok
}

// WorkloadPriorityClass returns a WorkloadPriorityClass by name.
func (s *State) WorkloadPriorityClass(name string) (*kueue.WorkloadPriorityClass, bool) {
	pc, ok := s.priorityClasses[name]
	return pc, ok
}

// FromManifests reports whether an object joined the state from the reviewed
// manifests (rather than the cluster state).
func (s *State) FromManifests(kind, namespace, name string) bool {
	return s.fromManifests[stateKey(kind, namespace, name)]
}

func stateKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// manifestStateKinds are the kinds that join the state when they appear in the
// reviewed manifests, so that a pull request adding a namespace, its queues and
// its jobs is reviewed as a whole. Deployments and ConfigMaps do not: a
// Deployment under review is judged by the controller guard against the cluster
// it would join, not against itself.
var manifestStateKinds = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                   true,
	{Group: "", Kind: "LimitRange"}:                                  true,
	{Group: kueueGroup, Kind: "LocalQueue"}:                          true,
	{Group: kueueGroup, Kind: "ClusterQueue"}:                        true,
	{Group: kueueGroup, Kind: "ResourceFlavor"}:                      true,
	{Group: kueueGroup, Kind: "WorkloadPriorityClass"}:               true,
	{Group: kueueGroup, Kind: "Cohort"}:                              true,
	{Group: trainerGroup, Kind: workload.ClusterTrainingRuntimeKind}: true,
	{Group: trainerGroup, Kind: workload.TrainingRuntimeKind}:        true,
	{Group: resourcev1.GroupName, Kind: "ResourceClaimTemplate"}:     true,
	{Group: resourcev1.GroupName, Kind: "DeviceClass"}:               true,
}

// stateKinds are the kinds a state holds, by group and kind: those of
// manifestStateKinds, Kueue's ConfigMap, RuntimeClasses and Deployments.
var stateKinds = func() map[schema.GroupKind]bool {
	m := maps.Clone(manifestStateKinds)
	m[schema.GroupKind{Group: "", Kind: "ConfigMap"}] = true
	m[schema.GroupKind{Group: "node.k8s.io", Kind: "RuntimeClass"}] = true
	m[schema.GroupKind{Group: "apps", Kind: "Deployment"}] = true
	// What simulate reads besides: Kueue's usage and queues, pods' priorities.
	m[schema.GroupKind{Group: kueueGroup, Kind: "Workload"}] = true
	m[schema.GroupKind{Group: schedulingv1.GroupName, Kind: "PriorityClass"}] = true
	return m
}()

// trainerGroup is Kubeflow Trainer's API group: Kueue builds a TrainJob's pod
// sets from the (Cluster)TrainingRuntime it names.
const trainerGroup = "trainer.kubeflow.org"

// IsManifestStateKind reports whether objects of this kind in the reviewed
// manifests join the cluster state.
func IsManifestStateKind(gk schema.GroupKind) bool { return manifestStateKinds[gk] }

// add puts one object into the state. It returns a note for fields it ignored,
// and an error for an object of a kind or version it cannot hold.
func (s *State) add(obj *unstructured.Unstructured) (note string, err error) {
	gvk := obj.GroupVersionKind()
	if !stateKinds[gvk.GroupKind()] {
		return "", fmt.Errorf("a cluster state cannot hold %s", kindString(gvk))
	}
	switch gvk.Group {
	case schedulingv1.GroupName:
		return s.addPriorityClass(obj)
	case "":
		if gvk.Version != "v1" {
			return "", fmt.Errorf("unsupported version %s of %s", gvk.GroupVersion(), gvk.Kind)
		}
		if gvk.Kind == "Namespace" {
			ns := &corev1.Namespace{}
			if note, err = convert(obj, ns); err != nil {
				return "", err
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			if _, ok := ns.Labels[namespaceNameLabel]; !ok {
				ns.Labels[namespaceNameLabel] = ns.Name
			}
			return note, s.Snapshot.Add(ns)
		}
		if gvk.Kind == "LimitRange" {
			lr := &corev1.LimitRange{}
			if note, err = convert(obj, lr); err != nil {
				return "", err
			}
			return note, s.Snapshot.Add(lr)
		}
		cm := &corev1.ConfigMap{}
		if note, err = convert(obj, cm); err != nil {
			return "", err
		}
		return note, s.Snapshot.Add(cm)
	case "node.k8s.io":
		if gvk.Version != "v1" {
			return "", fmt.Errorf("unsupported version %s of %s", gvk.GroupVersion(), gvk.Kind)
		}
		rc := &nodev1.RuntimeClass{}
		if note, err = convert(obj, rc); err != nil {
			return "", err
		}
		return note, s.Snapshot.Add(rc)
	case "apps":
		if gvk.Version != "v1" {
			return "", fmt.Errorf("unsupported version %s of %s", gvk.GroupVersion(), gvk.Kind)
		}
		return "", s.Snapshot.Add(obj.DeepCopy())
	case resourcev1.GroupName:
		if gvk.Version != "v1" {
			return "", fmt.Errorf("unsupported version %s of %s: use %s", gvk.GroupVersion(), gvk.Kind, resourcev1.SchemeGroupVersion)
		}
		var t client.Object = &resourcev1.ResourceClaimTemplate{}
		if gvk.Kind == "DeviceClass" {
			t = &resourcev1.DeviceClass{}
		}
		if note, err = convert(obj, t); err != nil {
			return "", err
		}
		return note, s.Snapshot.Add(t)
	case trainerGroup:
		if want := workload.TrainingRuntimeGVKs[0].GroupVersion(); gvk.GroupVersion() != want {
			return "", fmt.Errorf("unsupported version %s of %s: use %s", gvk.GroupVersion(), gvk.Kind, want)
		}
		return "", s.Snapshot.Add(obj.DeepCopy())
	}
	switch gvk.Version {
	case "v1beta2":
	case "v1beta1":
		return s.addKueueV1beta1(obj)
	default:
		return "", fmt.Errorf("unsupported version %s of %s: use %s/v1beta2 or v1beta1", gvk.GroupVersion(), gvk.Kind, kueueGroup)
	}
	switch gvk.Kind {
	case "Workload":
		wl := &kueue.Workload{}
		if note, err = convert(obj, wl); err == nil {
			s.workloads = append(s.workloads, *wl)
		}
	case "LocalQueue":
		lq := &kueue.LocalQueue{}
		if note, err = convert(obj, lq); err == nil {
			err = s.Snapshot.Add(lq)
		}
	case "ClusterQueue":
		cq := &kueue.ClusterQueue{}
		if note, err = convert(obj, cq); err == nil {
			err = s.Snapshot.Add(cq)
		}
	case "ResourceFlavor":
		rf := &kueue.ResourceFlavor{}
		if note, err = convert(obj, rf); err == nil {
			s.flavors[rf.Name] = rf
			err = s.Snapshot.Add(rf)
		}
	case "Cohort":
		c := &kueue.Cohort{}
		if note, err = convert(obj, c); err == nil {
			err = s.Snapshot.Add(c)
		}
	case "WorkloadPriorityClass":
		pc := &kueue.WorkloadPriorityClass{}
		if note, err = convert(obj, pc); err == nil {
			s.priorityClasses[pc.Name] = pc
		}
	}
	return note, err
}

// addKueueV1beta1 converts Kueue's previous API version (still served, and used
// by most of Kueue's documentation) with Kueue's own conversion functions.
func (s *State) addKueueV1beta1(obj *unstructured.Unstructured) (note string, err error) {
	switch obj.GetKind() {
	case "Workload":
		in, out := &kueuev1beta1.Workload{}, &kueue.Workload{}
		if note, err = convert(obj, in); err == nil {
			if err = kueuev1beta1.Convert_v1beta1_Workload_To_v1beta2_Workload(in, out, nil); err == nil {
				s.workloads = append(s.workloads, *out)
			}
		}
	case "LocalQueue":
		in, out := &kueuev1beta1.LocalQueue{}, &kueue.LocalQueue{}
		if note, err = convert(obj, in); err == nil {
			if err = kueuev1beta1.Convert_v1beta1_LocalQueue_To_v1beta2_LocalQueue(in, out, nil); err == nil {
				err = s.Snapshot.Add(out)
			}
		}
	case "ClusterQueue":
		in, out := &kueuev1beta1.ClusterQueue{}, &kueue.ClusterQueue{}
		if note, err = convert(obj, in); err == nil {
			if err = kueuev1beta1.Convert_v1beta1_ClusterQueue_To_v1beta2_ClusterQueue(in, out, nil); err == nil {
				err = s.Snapshot.Add(out)
			}
		}
	case "ResourceFlavor":
		in, out := &kueuev1beta1.ResourceFlavor{}, &kueue.ResourceFlavor{}
		if note, err = convert(obj, in); err == nil {
			if err = kueuev1beta1.Convert_v1beta1_ResourceFlavor_To_v1beta2_ResourceFlavor(in, out, nil); err == nil {
				s.flavors[out.Name] = out
				err = s.Snapshot.Add(out)
			}
		}
	case "WorkloadPriorityClass":
		in, out := &kueuev1beta1.WorkloadPriorityClass{}, &kueue.WorkloadPriorityClass{}
		if note, err = convert(obj, in); err == nil {
			if err = kueuev1beta1.Convert_v1beta1_WorkloadPriorityClass_To_v1beta2_WorkloadPriorityClass(in, out, nil); err == nil {
				s.priorityClasses[out.Name] = out
			}
		}
	case "Cohort":
		in, out := &kueuev1beta1.Cohort{}, &kueue.Cohort{}
		if note, err = convert(obj, in); err == nil {
			if err = kueuev1beta1.Convert_v1beta1_Cohort_To_v1beta2_Cohort(in, out, nil); err == nil {
				err = s.Snapshot.Add(out)
			}
		}
	}
	return note, err
}

// convert decodes an unstructured object into a typed one. Unknown fields are
// reported as a note, not an error: a state dumped from a cluster running a newer
// Kueue may carry fields this version does not know, and a typo is still visible.
func convert(obj *unstructured.Unstructured, into any) (string, error) {
	err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, into, true)
	if err == nil {
		return "", nil
	}
	if runtime.IsStrictDecodingError(err) {
		return "ignored " + err.Error(), nil
	}
	return "", fmt.Errorf("cannot read %s: %w", obj.GetKind(), err)
}

// LoadStateFile reads a cluster state file (the YAML or JSON of Namespaces,
// LocalQueues, ClusterQueues, ResourceFlavors, WorkloadPriorityClasses, Kueue's
// ConfigMap and Deployments; Lists as `kubectl get -o yaml` writes them are fine).
// Objects of other kinds are skipped with a note, so that a broad dump still works
// and nothing is dropped silently; unreadable documents are errors.
func LoadStateFile(path, kueueNamespace string) (*State, []*InputError) {
	s := NewState(kueueNamespace)
	s.Source, s.Where = StateFile, path
	ms, errs := Read([]string{path}, nil)
	for _, m := range ms {
		gvk := m.Object.GroupVersionKind()
		if !stateKinds[gvk.GroupKind()] {
			s.Notes = append(s.Notes, fmt.Sprintf("cluster state %s: skipped %s %s: not part of a cluster state",
				m.Source, kindString(gvk), objectRef(m.Object)))
			continue
		}
		note, err := s.add(m.Object)
		if err != nil {
			errs = append(errs, &InputError{File: m.Source.File, Document: m.Source.Document, Line: m.Source.Line, Message: err.Error()})
			continue
		}
		if note != "" {
			s.Notes = append(s.Notes, fmt.Sprintf("cluster state %s: %s %s: %s", m.Source, gvk.Kind, objectRef(m.Object), note))
		}
	}
	return s, errs
}

// addFromManifest puts an object of the reviewed manifests into the state (it
// replaces a cluster object of the same name: the manifest is what will be
// applied).
func (s *State) addFromManifest(obj *unstructured.Unstructured) (string, error) {
	note, err := s.add(obj)
	if err != nil {
		return "", err
	}
	s.fromManifests[stateKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())] = true
	return note, nil
}

// kindString renders "LocalQueue.kueue.x-k8s.io/v1beta2" style kinds for messages.
func kindString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind + " " + gvk.Version
	}
	return gvk.Kind + " " + gvk.Group + "/" + gvk.Version
}

// objectRef renders "namespace/name" or "name".
func objectRef(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if name == "" && obj.GetGenerateName() != "" {
		name = obj.GetGenerateName() + "*"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + name
	}
	return name
}

// sortedKeys returns a map's keys in order, for deterministic reports.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
