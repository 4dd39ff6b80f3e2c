package kueuestate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/live"
)

// Group is Kueue's API group.
const Group = integrations.KueueGroup

// versions are the API versions read, the first the cluster serves.
var versions = integrations.KueueAPIVersions

// Kind is one kind of the admins' Kueue objects.
type Kind struct {
	Kind, Resource string
	Namespaced     bool
	// File is the kind's file in an export directory: the names sort in the
	// order the kinds depend on each other, so that `kubectl apply -f DIR`
	// (which applies files in name order) creates what is referenced first.
	File string
}

// Kinds are the admins' Kueue objects, in the order they are applied: what a
// kind references comes before it (a ResourceFlavor names a Topology; an
// AdmissionCheck a ProvisioningRequestConfig or MultiKueueConfig; a
// MultiKueueConfig its MultiKueueClusters; a ClusterQueue its flavors, cohort
// and checks; a LocalQueue its ClusterQueue). Workloads are not among them:
// Kueue makes them from the jobs.
var Kinds = []Kind{
	{Kind: "Topology", Resource: "topologies", File: "01-topologies.yaml"},
	{Kind: "ResourceFlavor", Resource: "resourceflavors", File: "02-resourceflavors.yaml"},
	{Kind: "Cohort", Resource: "cohorts", File: "03-cohorts.yaml"},
	{Kind: "WorkloadPriorityClass", Resource: "workloadpriorityclasses", File: "04-workloadpriorityclasses.yaml"},
	{Kind: "ProvisioningRequestConfig", Resource: "provisioningrequestconfigs", File: "05-provisioningrequestconfigs.yaml"},
	{Kind: "MultiKueueCluster", Resource: "multikueueclusters", File: "06-multikueueclusters.yaml"},
	{Kind: "MultiKueueConfig", Resource: "multikueueconfigs", File: "07-multikueueconfigs.yaml"},
	{Kind: "AdmissionCheck", Resource: "admissionchecks", File: "08-admissionchecks.yaml"},
	{Kind: "ClusterQueue", Resource: "clusterqueues", File: "09-clusterqueues.yaml"},
	{Kind: "LocalQueue", Resource: "localqueues", Namespaced: true, File: "10-localqueues.yaml"},
}

// ConfigurationFile holds Kueue's Configuration ConfigMap in an export of an
// oss install; it comes first: Kueue reads it at start.
const ConfigurationFile = "00-kueue-configuration.yaml"

// configurationKey is the ConfigMap key Kueue's manager reads.
const configurationKey = "controller_manager_config.yaml"

// kindRank orders objects by Kinds (the ConfigMap first).
func kindRank(kind string) int {
	for i, k := range Kinds {
		if k.Kind == kind {
			return i + 1
		}
	}
	return 0
}

// Client reads and writes a cluster's Kueue objects.
type Client struct {
	reader *live.Reader
	dyn    dynamic.Interface
	// schemas are the OpenAPI schemas of the kinds' CRDs at the version read,
	// by kind; a kind whose CRD cannot be read has none (no default pruned).
	schemas map[string]map[string]any
	// served maps each served kind to its resource at the version read.
	served map[string]schema.GroupVersionResource
	// NotServed are the kinds the cluster does not serve (an older Kueue, or
	// none).
	NotServed []string
}

// NewClient discovers which of Kinds the cluster serves.
func NewClient(cfg *rest.Config) (*Client, error) {
	r, err := live.New(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{reader: r, dyn: r.Dynamic(), served: map[string]schema.GroupVersionResource{}, schemas: map[string]map[string]any{}}
	for _, k := range Kinds {
		gvr, ok, err := r.FirstServed(Group, versions, k.Resource)
		if err != nil {
			return nil, err
		}
		if !ok {
			c.NotServed = append(c.NotServed, k.Kind)
			continue
		}
		c.served[k.Kind] = gvr
		c.schemas[k.Kind] = c.crdSchema(k, gvr.Version)
	}
	return c, nil
}

// crdSchema reads the OpenAPI schema of a kind's CRD at a version; nil when
// it cannot be read (RBAC without CRDs: no default is pruned then).
func (c *Client) crdSchema(k Kind, version string) map[string]any {
	crd, err := c.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(context.Background(), k.Resource+"."+Group, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range vs {
		m, _ := v.(map[string]any)
		if m["name"] == version {
			s, _, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema")
			return s
		}
	}
	return nil
}

// clean is Clean, then PruneDefaults with the kind's schema.
func (c *Client) clean(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := Clean(u)
	if s := c.schemas[u.GetKind()]; s != nil {
		PruneDefaults(out.Object, s)
	}
	return out
}

func (c *Client) resource(k Kind, namespace string) (dynamic.ResourceInterface, bool) {
	gvr, ok := c.served[k.Kind]
	if !ok {
		return nil, false
	}
	if k.Namespaced && namespace != "" {
		return c.dyn.Resource(gvr).Namespace(namespace), true
	}
	return c.dyn.Resource(gvr), true
}

// Export lists every object of Kinds the cluster serves, cleaned (Clean), in
// apply order, then namespace and name; with kueueNamespace set (an oss
// install), Kueue's Configuration ConfigMap there first.
func (c *Client) Export(ctx context.Context, kueueNamespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	if kueueNamespace != "" {
		cms, err := c.reader.List(ctx, corev1.SchemeGroupVersion.WithResource("configmaps"), live.Options{Namespace: kueueNamespace})
		if err != nil {
			return nil, err
		}
		for _, cm := range cms {
			if _, ok, _ := unstructured.NestedString(cm.Object, "data", configurationKey); ok {
				out = append(out, c.clean(cm))
			}
		}
	}
	for _, k := range Kinds {
		gvr, ok := c.served[k.Kind]
		if !ok {
			continue
		}
		items, err := c.reader.List(ctx, gvr, live.Options{})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(items, func(a, b *unstructured.Unstructured) int {
			return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
		})
		for _, it := range items {
			out = append(out, c.clean(it))
		}
	}
	return out, nil
}

// fileOf is the export file of an object.
func fileOf(u *unstructured.Unstructured) string {
	if u.GetKind() == "ConfigMap" {
		return ConfigurationFile
	}
	if k, ok := kindOf(u.GetKind()); ok {
		return k.File
	}
	return "99-other.yaml"
}

// Write writes objects as YAML documents, to one file per kind in dir, or to w
// when dir is empty. It returns the files written.
func Write(objs []*unstructured.Unstructured, dir string, w io.Writer) ([]string, error) {
	byFile := map[string][]*unstructured.Unstructured{}
	var files []string
	for _, o := range objs {
		f := fileOf(o)
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
		byFile[f] = append(byFile[f], o)
	}
	slices.Sort(files)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		var b strings.Builder
		for _, o := range byFile[f] {
			y, err := yaml.Marshal(o.Object)
			if err != nil {
				return nil, err
			}
			b.WriteString("---\n")
			b.Write(y)
		}
		if dir == "" {
			if _, err := io.WriteString(w, b.String()); err != nil {
				return nil, err
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Read reads every .yaml, .yml and .json file of dir, in name order (the
// apply order of an export), and returns their objects, ordered by kind as
// Kinds applies them.
func Read(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for n := 1; ; n++ {
			obj := map[string]any{}
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				f.Close()
				return nil, fmt.Errorf("%s, document %d: %w", e.Name(), n, err)
			}
			if len(obj) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			if u.GetKind() == "" || u.GetName() == "" {
				f.Close()
				return nil, fmt.Errorf("%s, document %d: not an object with a kind and a name", e.Name(), n)
			}
			out = append(out, u)
		}
		f.Close()
	}
	slices.SortStableFunc(out, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(kindRank(a.GetKind()), kindRank(b.GetKind()))
	})
	return out, nil
}

// Change is one difference between an exported object and the cluster.
type Change struct {
	Kind, Namespace, Name string
	// Missing says the cluster lacks it; Extra that only the cluster has it;
	// otherwise Fields are the fields that differ.
	Missing, Extra bool
	Fields         []string
}

func (c Change) String() string {
	id := c.Kind + " " + c.Name
	if c.Namespace != "" {
		id = c.Kind + " " + c.Namespace + "/" + c.Name
	}
	switch {
	case c.Missing:
		return "missing  " + id
	case c.Extra:
		return "extra    " + id + " (only in the cluster)"
	}
	return "differs  " + id + ": " + strings.Join(c.Fields, "; ")
}

// Diff compares the objects of an export with the cluster: every object the
// cluster lacks or holds differently (cleaned as Export cleans it), then, as
// extras, the cluster's objects of the exported kinds that the export does not
// hold.
func (c *Client) Diff(ctx context.Context, want []*unstructured.Unstructured) ([]Change, error) {
	var out []Change
	seen := map[string]bool{}
	kinds := map[string]bool{}
	for _, w := range want {
		key := w.GetKind() + "/" + w.GetNamespace() + "/" + w.GetName()
		seen[key] = true
		kinds[w.GetKind()] = true
		live, err := c.get(ctx, w)
		if apierrors.IsNotFound(err) {
			out = append(out, Change{Kind: w.GetKind(), Namespace: w.GetNamespace(), Name: w.GetName(), Missing: true})
			continue
		}
		if err != nil {
			return nil, err
		}
		if fields := diffFields("", c.clean(w).Object, c.clean(live).Object); len(fields) > 0 {
			out = append(out, Change{Kind: w.GetKind(), Namespace: w.GetNamespace(), Name: w.GetName(), Fields: fields})
		}
	}
	for _, k := range Kinds {
		if !kinds[k.Kind] {
			continue
		}
		gvr, ok := c.served[k.Kind]
		if !ok {
			continue
		}
		items, err := c.reader.List(ctx, gvr, live.Options{})
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if !seen[k.Kind+"/"+item.GetNamespace()+"/"+item.GetName()] {
				out = append(out, Change{Kind: k.Kind, Namespace: item.GetNamespace(), Name: item.GetName(), Extra: true})
			}
		}
	}
	return out, nil
}

// get reads the live object of an exported one.
func (c *Client) get(ctx context.Context, w *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, err := c.resourceOf(w)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, w.GetName(), metav1.GetOptions{})
}

// kindOf finds a kind of Kinds.
func kindOf(kind string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// resourceOf is where an exported object lives: Kueue's Configuration
// ConfigMap, or one of Kinds the cluster serves.
func (c *Client) resourceOf(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	if obj.GetKind() == "ConfigMap" {
		return c.dyn.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(obj.GetNamespace()), nil
	}
	k, ok := kindOf(obj.GetKind())
	if !ok {
		return nil, fmt.Errorf("%s is not one of the Kueue kinds kueue-guard restores", obj.GetKind())
	}
	ri, ok := c.resource(k, obj.GetNamespace())
	if !ok {
		return nil, fmt.Errorf("the cluster does not serve %s.%s: is Kueue installed?", k.Resource, Group)
	}
	return ri, nil
}

// diffFields lists the fields where want and live differ, as
// "path: want → live".
func diffFields(path string, want, live any) []string {
	wm, wok := want.(map[string]any)
	lm, lok := live.(map[string]any)
	if wok && lok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range lm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		var out []string
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			wv, win := wm[k]
			lv, lin := lm[k]
			switch {
			case !lin:
				out = append(out, p+": "+short(wv)+" → (none)")
			case !win:
				out = append(out, p+": (none) → "+short(lv))
			default:
				out = append(out, diffFields(p, wv, lv)...)
			}
		}
		return out
	}
	if jsonEqual(want, live) {
		return nil
	}
	return []string{path + ": " + short(want) + " → " + short(live)}
}

// short renders a value on one line, cut at 80 characters.
func short(v any) string {
	b, err := yaml.Marshal(v)
	s := strings.TrimSpace(string(b))
	if err != nil {
		s = fmt.Sprint(v)
	}
	if strings.Contains(s, "\n") {
		if j, err := jsonMarshal(v); err == nil {
			s = j
		}
	}
	if len(s) > 80 {
		s = s[:79] + "…"
	}
	return s
}

// FieldManager is who restore applies as.
const FieldManager = "kueue-guard"

// Apply applies an object server-side, as FieldManager, taking over fields
// another manager set.
func (c *Client) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	body, err := jsonMarshal(Clean(obj).Object)
	if err != nil {
		return err
	}
	ri, err := c.resourceOf(obj)
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, []byte(body),
		metav1.PatchOptions{FieldManager: FieldManager, Force: ptrTrue()})
	return err
}

func ptrTrue() *bool { b := true; return &b }

// Active reports whether a ClusterQueue is active (its Active condition true),
// and the condition's message otherwise.
func (c *Client) Active(ctx context.Context, name string) (bool, string, error) {
	cq := &unstructured.Unstructured{}
	cq.SetKind("ClusterQueue")
	cq.SetName(name)
	cq, err := c.get(ctx, cq)
	if err != nil {
		return false, "", err
	}
	conds, _, _ := unstructured.NestedSlice(cq.Object, "status", "conditions")
	for _, cond := range conds {
		m, _ := cond.(map[string]any)
		if m["type"] == "Active" {
			msg, _ := m["message"].(string)
			return m["status"] == "True", msg, nil
		}
	}
	return false, "no Active condition yet (is Kueue's manager running?)", nil
}
