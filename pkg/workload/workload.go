// Package workload reads what admission decisions need from any catalog kind: its
// queue and priority labels, its controller owner, and the resources it requests.
//
// Objects arrive as unstructured content (the webhook registers for many kinds,
// several of them CRDs), so this package works on maps with every type assertion
// checked: a malformed object yields "not found", never a panic.
package workload

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"
)

// Labels returns the label map that holds the kind's queue label (nil when absent
// or malformed).
func Labels(obj *unstructured.Unstructured, in *integrations.Integration) map[string]string {
	m, ok := ownLabels(obj, in)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.(string)
	}
	return out
}

// ownLabels is the label map at the kind's own queue-label place, read in
// place (never to be written), and whether it is there and well formed: an
// object whose every value is a string.
func ownLabels(obj *unstructured.Unstructured, in *integrations.Integration) (map[string]any, bool) {
	// in.LabelsPath() without its copy: QueueLabelPath, then "labels".
	meta, found, err := unstructured.NestedFieldNoCopy(obj.Object, in.QueueLabelPath...)
	if !found || err != nil {
		return nil, false
	}
	metaMap, _ := meta.(map[string]any)
	m, isMap := metaMap["labels"].(map[string]any)
	if !isMap {
		return nil, false
	}
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return nil, false
		}
	}
	return m, true
}

// QueueName is the workload's effective kueue.x-k8s.io/queue-name, or "": read
// where Kueue reads it (see EffectiveLabel).
func QueueName(obj *unstructured.Unstructured, in *integrations.Integration) string {
	return EffectiveLabel(obj, in, integrations.QueueNameLabel)
}

// PriorityClass is the workload's effective kueue.x-k8s.io/priority-class, or "".
func PriorityClass(obj *unstructured.Unstructured, in *integrations.Integration) string {
	return EffectiveLabel(obj, in, integrations.PriorityClassLabel)
}

// OwnLabel is a label at the kind's own queue-label place (the object's
// metadata, a CronJob's job template), ignoring pod templates: Labels(obj,
// in)[key], without the copy Labels makes. It is asked for several times per
// request (BenchmarkHandler: tens of allocations a request saved).
func OwnLabel(obj *unstructured.Unstructured, in *integrations.Integration, key string) string {
	m, _ := ownLabels(obj, in)
	s, _ := m[key].(string)
	return s
}

// EffectiveLabel is the value of one of Kueue's labels as Kueue acts on it: the
// object's own label; for kinds whose pods Kueue admits as pods or pod groups
// (integrations.Integration.TemplateQueue), else the pod template's. Every other
// place the label appears must agree with it (NestedLabelSites, checked by the
// validating path), so reading one place is enough.
func EffectiveLabel(obj *unstructured.Unstructured, in *integrations.Integration, key string) string {
	if v := OwnLabel(obj, in, key); v != "" || !in.TemplateQueue {
		return v
	}
	for _, s := range NestedLabelSites(obj, in, key) {
		if s.Value != "" {
			return s.Value
		}
	}
	return ""
}

// LabelSite is one place inside an object, other than its own labels, where a
// label is set: a pod template's, a JobSet's job template's, an AppWrapper
// component's.
type LabelSite struct {
	// Path is the labels map's path (without the key).
	Path *field.Path
	// Key and Value are the label there.
	Key, Value string
}

// Field is the site's label as a field path, for violations.
func (s LabelSite) Field() *field.Path { return s.Path.Key(s.Key) }

// NestedLabelSites finds, in one walk, every labels map nested in the object (any
// `metadata.labels` below the top level, other than the kind's own queue-label
// place) that sets one of keys, sorted by path. Kinds keep pod templates in many
// places (spec.template, a JobSet's replicatedJobs, Kubeflow's replica specs,
// Ray's head and worker groups, LeaderWorkerSet's leader and worker templates,
// AppWrapper's embedded objects), and Kueue or the pods it admits read labels
// there, so the walk looks everywhere, bounded in depth. It runs on every
// request: a field path is only built for a label it finds.
func NestedLabelSites(obj *unstructured.Unstructured, in *integrations.Integration, keys ...string) []LabelSite {
	var out []LabelSite
	visitNestedLabels(obj, in, func(segs []segment, labels map[string]any) {
		for _, key := range keys {
			if v, ok := labels[key].(string); ok {
				out = append(out, LabelSite{Path: pathOf(segs).Child("metadata", "labels"), Key: key, Value: v})
			}
		}
	})
	if len(out) > 1 {
		slices.SortStableFunc(out, func(a, b LabelSite) int { return cmp.Compare(a.Path.String(), b.Path.String()) })
	}
	return out
}

// AlignNestedLabels sets key to value wherever a nested labels map already sets
// it to something else, so that a defaulted workload's templates agree with it,
// and returns the JSON patch operations that do the same to the object as
// received. It adds the label nowhere new.
func AlignNestedLabels(obj *unstructured.Unstructured, in *integrations.Integration, key, value string) []jsonpatch.Operation {
	var ops []jsonpatch.Operation
	visitNestedLabels(obj, in, func(segs []segment, labels map[string]any) {
		if old, ok := labels[key]; ok && old != value {
			labels[key] = value
			ops = append(ops, jsonpatch.NewOperation("replace", segmentsPointer(segs, "metadata", "labels", key), value))
		}
	})
	// The walk visits maps in no particular order: the patch is deterministic.
	slices.SortFunc(ops, func(a, b jsonpatch.Operation) int { return cmp.Compare(a.Path, b.Path) })
	return ops
}

// segment is one step of a walk: a map key, or an index (key "") into a list.
type segment struct {
	key   string
	index int
}

func pathOf(segs []segment) *field.Path {
	var p *field.Path
	for _, s := range segs {
		switch {
		case s.key == "":
			p = p.Index(s.index)
		case p == nil:
			p = field.NewPath(s.key)
		default:
			p = p.Child(s.key)
		}
	}
	return p
}

// visitNestedLabels calls visit with every nested metadata.labels map and the
// path of the object that holds it, except the object's own and the kind's own
// queue-label place (a CronJob's job template). Maps are visited in no
// particular order.
func visitNestedLabels(obj *unstructured.Unstructured, in *integrations.Integration, visit func([]segment, map[string]any)) {
	// The kind's own labels live in QueueLabelPath's metadata; its holder is
	// the path before "metadata" (the root for most kinds).
	owner := in.QueueLabelPath[:len(in.QueueLabelPath)-1]
	isOwn := func(segs []segment) bool {
		if len(segs) != len(owner) {
			return false
		}
		for i, s := range segs {
			if s.key != owner[i] {
				return false
			}
		}
		return true
	}
	walkMaps(obj.Object, nil, func(segs []segment, n map[string]any) {
		if md, ok := n["metadata"].(map[string]any); ok && len(segs) > 0 && !isOwn(segs) {
			if labels, ok := md["labels"].(map[string]any); ok {
				visit(segs, labels)
			}
		}
	}, notTemplates...)
}

// walkMaps calls visit with every map under node (node included when it is
// one) and its path after prefix, in no particular order, bounded in depth: the
// walks here run on untrusted input. Keys in skip are not entered.
func walkMaps(node any, prefix []segment, visit func([]segment, map[string]any), skip ...string) {
	segs := append(make([]segment, 0, 16), prefix...)
	var walk func(node any, depth int)
	walk = func(node any, depth int) {
		if depth > maxDepth {
			return
		}
		switch n := node.(type) {
		case map[string]any:
			visit(segs, n)
			for k, v := range n {
				if slices.Contains(skip, k) {
					continue
				}
				switch v.(type) {
				case map[string]any, []any:
					segs = append(segs, segment{key: k})
					walk(v, depth+1)
					segs = segs[:len(segs)-1]
				}
			}
		case []any:
			for i, v := range n {
				switch v.(type) {
				case map[string]any, []any:
					segs = append(segs, segment{index: i})
					walk(v, depth+1)
					segs = segs[:len(segs)-1]
				}
			}
		}
	}
	walk(node, len(prefix))
}

// resourceMapKeys are the fields that hold a container's or a node's resource
// requirements in the catalog's kinds: containers' `resources` in every pod
// template, and TrainJob's `resourcesPerNode`.
var resourceMapKeys = map[string]bool{"resources": true, "resourcesPerNode": true}

// RequestsResource reports whether any pod template or resource block in the object
// requests (or limits, which Kueue counts as a request when no request is given)
// a positive amount of the named resource. It walks the whole object, so it sees
// pod templates wherever a kind keeps them, embedded templates of an AppWrapper
// included.
func RequestsResource(obj *unstructured.Unstructured, name corev1.ResourceName) bool {
	return walkRequests(obj.Object, string(name), 0)
}

// ContainerLists are the keys of a pod spec's container lists, main
// containers first. The walks for templates, labels and markers never enter
// them: no kind's schema keeps a pod template or object metadata inside a
// container (nothing Kueue reads is there), and a container's environment,
// probes and mounts are most of a workload's maps.
var ContainerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// notTemplates are what the label and marker walks skip: the objects' own
// metadata (read at its holder), status and containers.
var notTemplates = append([]string{"metadata", "status"}, ContainerLists...)

// maxDepth bounds the walk over untrusted input.
const maxDepth = 64

func walkRequests(node any, name string, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if resourceMapKeys[k] && hasPositive(v, name) {
				return true
			}
			if walkRequests(v, name, depth+1) {
				return true
			}
		}
	case []any:
		for _, v := range n {
			if walkRequests(v, name, depth+1) {
				return true
			}
		}
	}
	return false
}

func hasPositive(res any, name string) bool {
	m, ok := res.(map[string]any)
	if !ok {
		return false
	}
	for _, key := range []string{"requests", "limits"} {
		list, ok := m[key].(map[string]any)
		if !ok {
			continue
		}
		if v, ok := list[name]; ok && positiveQuantity(v) {
			return true
		}
	}
	return false
}

// QueueMayChange reports whether Kueue lets the queue of a workload change in an
// update from old to new: only while it is suspended (by the kind's own rule in
// the catalog), so a running workload can never leave its queue.
func QueueMayChange(in *integrations.Integration, old, new *unstructured.Unstructured) bool {
	s := in.Suspension
	switch {
	case s.QueueMutable:
		return true
	case s.QueueImmutable:
		return false
	case s.Field != nil:
		suspended, _, _ := unstructured.NestedBool(new.Object, s.Field...)
		return suspended
	case s.NoReadyReplicas:
		ready, _, _ := unstructured.NestedInt64(old.Object, "status", "readyReplicas")
		// Kueue also refuses removing the label outright from such kinds.
		return ready == 0 && QueueName(new, in) != ""
	case s.SchedulingGate != "":
		// Kueue counts a terminated Pod as suspended too.
		phase, _, _ := unstructured.NestedString(new.Object, "status", "phase")
		return HasSchedulingGate(new, s.SchedulingGate) || phase == "Succeeded" || phase == "Failed"
	}
	return false
}

// Resumes reports whether an update starts a suspended workload, by the kind's
// own rule in the catalog: its suspend field goes from true to false, or Kueue's
// scheduling gate is removed from a Pod.
func Resumes(in *integrations.Integration, old, new *unstructured.Unstructured) bool {
	s := in.Suspension
	switch {
	case s.Field != nil:
		was, _, _ := unstructured.NestedBool(old.Object, s.Field...)
		is, _, _ := unstructured.NestedBool(new.Object, s.Field...)
		return was && !is
	case s.SchedulingGate != "":
		return HasSchedulingGate(old, s.SchedulingGate) && !HasSchedulingGate(new, s.SchedulingGate)
	}
	return false
}

// HasSchedulingGate reports whether a Pod carries the named scheduling gate.
func HasSchedulingGate(obj *unstructured.Unstructured, gate string) bool {
	gates, _, _ := unstructured.NestedSlice(obj.Object, "spec", "schedulingGates")
	for _, g := range gates {
		if m, ok := g.(map[string]any); ok && m["name"] == gate {
			return true
		}
	}
	return false
}

// Annotations returns the annotations beside the kind's queue label.
func Annotations(obj *unstructured.Unstructured, in *integrations.Integration) (map[string]string, bool) {
	m, found, _ := unstructured.NestedStringMap(obj.Object, in.AnnotationsPath()...)
	return m, found
}

// PodSpecPaths lists the path, from the object's root, of every pod spec under
// its spec: every map whose containers is a list — spec itself for a Pod, every
// pod template's spec elsewhere, wherever the kind keeps it (an AppWrapper's
// embedded objects included). A path's elements are map keys (strings) and list
// indices (ints), in walk order. The walk is bounded in depth like every walk
// here, and never enters status.
func PodSpecPaths(obj *unstructured.Unstructured) [][]any {
	spec, ok := obj.Object["spec"]
	if !ok {
		return nil
	}
	var out [][]any
	walkMaps(spec, []segment{{key: "spec"}}, func(segs []segment, n map[string]any) {
		if _, ok := n["containers"].([]any); ok {
			path := make([]any, len(segs))
			for i, s := range segs {
				if s.key == "" {
					path[i] = s.index
				} else {
					path[i] = s.key
				}
			}
			out = append(out, path)
		}
	}, ContainerLists...)
	if len(out) > 1 {
		slices.SortFunc(out, comparePaths)
	}
	return out
}

// comparePaths orders paths element by element, indices before keys.
func comparePaths(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ai, aInt := a[i].(int)
		bi, bInt := b[i].(int)
		switch {
		case aInt && bInt:
			if c := cmp.Compare(ai, bi); c != 0 {
				return c
			}
		case aInt:
			return -1
		case bInt:
			return 1
		default:
			if c := strings.Compare(a[i].(string), b[i].(string)); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(a), len(b))
}

// PeekOwnLabels reads, from the object's JSON, only the labels at the kind's own
// queue-label place (OwnLabel's map), without decoding the rest: what the
// mutating path needs to see that it has nothing to do. It decodes
// case-sensitively, as the API server does, and reads the labels as Labels
// reads the decoded object; an error means "decode it fully", which also reads
// what the peek declines (labels that are not all strings, a key repeated on
// the way to them).
func PeekOwnLabels(raw []byte, in *integrations.Integration) (map[string]string, error) {
	v, found, ok := jsonmap.At(raw, in.LabelsPath())
	if !ok {
		return nil, errors.New("the object's labels cannot be peeked at")
	}
	if !found || v == nil {
		return nil, nil
	}
	// The labels alone, where the decoded object has them.
	obj := &unstructured.Unstructured{Object: nestedValue(in.QueueLabelPath, "labels", v)}
	if _, ok := ownLabels(obj, in); !ok {
		return nil, errors.New("the object's labels are not an object of strings")
	}
	return Labels(obj, in), nil
}
