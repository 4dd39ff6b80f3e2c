package preflight

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// State is what preflight read from the cluster. Each part has its own error:
// a part that could not be read makes its checks errors, not the others.
type State struct {
	// Host is the API server's address.
	Host string

	// Version is the API server's gitVersion ("v1.35.4").
	Version    string
	VersionErr error

	// Managers are the Kueue controller managers found, one per top-level
	// controller, sorted.
	Managers    []Manager
	ManagersErr error

	// KueueConfigs are the Configurations the managers mount.
	KueueConfigs []KueueConfiguration
	// Topologies is how many Kueue Topology objects exist (topology-aware
	// scheduling in use).
	Topologies    int
	TopologiesErr error

	// Workloads are the queued workloads of kinds the target does not
	// support (or, for oss, whose framework no Configuration found enables).
	Workloads    []QueuedWorkload
	WorkloadsErr error
	// Listed are the kinds looked at, "Kind.group"; NotServed the kinds of
	// that set the cluster does not serve (none of them can exist).
	Listed, NotServed []string

	// Mutating are the cluster's mutating webhook configurations.
	Mutating    []admissionregistrationv1.MutatingWebhookConfiguration
	MutatingErr error

	// Guards are kueue-guard's configurations: the --config file, or every
	// one installed by the chart.
	Guards    []GuardConfig
	GuardsErr error
}

// Manager is one Kueue controller manager: a Deployment (with its
// ReplicaSets and Pods), StatefulSet, DaemonSet, lone ReplicaSet or bare Pod.
type Manager struct {
	Identity kueuecontroller.Identity
	// Reasons are the fingerprint's signals.
	Reasons []string
	// Image is the manager container's image.
	Image string
	// Labels and Annotations are the top-level object's.
	Labels, Annotations map[string]string
	// ConfigMaps are the ConfigMaps its pods mount.
	ConfigMaps []string
	// FeatureGates is the value of the manager's --feature-gates flag.
	FeatureGates string
	// Version is the Kueue release it says it runs ("" when unnamed).
	Version string
}

// HelmRelease is the Helm release that installed the manager, or "".
func (m *Manager) HelmRelease() string {
	if r := m.Annotations["meta.helm.sh/release-name"]; r != "" {
		return r
	}
	if m.Labels["app.kubernetes.io/managed-by"] == "Helm" {
		return m.Labels["app.kubernetes.io/instance"]
	}
	return ""
}

// HelmNamespace is the Helm release's namespace.
func (m *Manager) HelmNamespace() string {
	if ns := m.Annotations["meta.helm.sh/release-namespace"]; ns != "" {
		return ns
	}
	return m.Identity.Namespace
}

// KueueConfiguration is a Kueue Configuration a manager mounts.
type KueueConfiguration struct {
	// Manager is whose it is.
	Manager kueuecontroller.Identity
	// Source is the ConfigMap, "namespace/name".
	Source string
	// Frameworks are the enabled integrations (Kueue's default applied);
	// External the externalFrameworks.
	Frameworks, External []string
	// FeatureGates are the gates the Configuration sets, with the manager's
	// --feature-gates flag over them.
	FeatureGates map[string]bool
	// ManageJobsWithoutQueueName is the Configuration's setting.
	ManageJobsWithoutQueueName bool
	// Err says the Configuration could not be read or parsed; NotFound that
	// the manager mounts no ConfigMap holding one.
	Err      error
	NotFound bool
}

// QueuedWorkload is an existing workload Kueue manages (or would).
type QueuedWorkload struct {
	Integration *integrations.Integration
	Namespace   string
	Name        string
	// Queue is its queue-name label (or its Workload's spec.queueName).
	Queue string
	// Workload names the Kueue Workload that showed it, when it was found by
	// that rather than by its label (Kueue managing it without one).
	Workload string
}

// GuardConfig is one kueue-guard configuration.
type GuardConfig struct {
	// Source is the file, or "ConfigMap namespace/name".
	Source string
	// Release is the Helm release of the chart that rendered it, or "".
	Release   string
	Namespace string
	Config    *config.Configuration
	Err       error
}

// Options choose what Gather reads.
type Options struct {
	Target Target
	// ConfigFile is kueue-guard's configuration file; empty reads the
	// chart's ConfigMaps from the cluster.
	ConfigFile string
}

// guardPartOf is the label the kueue-guard chart puts on everything it renders.
const (
	guardPartOfLabel = "app.kubernetes.io/part-of=kueue-guard"
	guardConfigKey   = "config.yaml"
)

type gatherer struct {
	kube   kubernetes.Interface
	reader *live.Reader
}

// Gather reads everything the checks judge. Only a failure to build the
// clients is an error; every other failure is recorded in its part of State.
func Gather(ctx context.Context, cfg *rest.Config, o Options) (*State, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r, err := live.New(cfg)
	if err != nil {
		return nil, err
	}
	g := &gatherer{kube: kube, reader: r}
	s := &State{Host: cfg.Host}

	if v, err := kube.Discovery().ServerVersion(); err != nil {
		s.VersionErr = err
	} else {
		s.Version = v.GitVersion
	}
	s.Guards, s.GuardsErr = g.guards(ctx, o.ConfigFile)
	s.Managers, s.ManagersErr = g.managers(ctx)
	for i := range s.Managers {
		s.KueueConfigs = append(s.KueueConfigs, g.kueueConfig(ctx, &s.Managers[i]))
	}
	s.Topologies, s.TopologiesErr = g.countKueue(ctx, "topologies")
	s.Workloads, s.Listed, s.NotServed, s.WorkloadsErr = g.workloads(ctx, listedKinds(o.Target, s.KueueConfigs))
	hooks, err := live.ListAs[admissionregistrationv1.MutatingWebhookConfiguration](ctx, r,
		admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"), live.Options{})
	for _, h := range hooks {
		s.Mutating = append(s.Mutating, *h)
	}
	s.MutatingErr = err
	return s, nil
}

// listedKinds are the kinds whose queued workloads the target cannot manage:
// for managed, those outside its set; for oss, those none of the
// Configurations found enables (none found: nothing to compare with).
func listedKinds(target Target, configs []KueueConfiguration) []*integrations.Integration {
	var out []*integrations.Integration
	var enabled []string
	found := false
	for _, c := range configs {
		if c.Err != nil || c.NotFound {
			continue
		}
		found = true
		enabled = append(append(enabled, c.Frameworks...), c.External...)
	}
	for _, in := range integrations.All() {
		switch {
		case target == TargetManaged && !in.Managed:
			out = append(out, in)
		case target == TargetOSS && found && !in.EnabledBy(enabled):
			out = append(out, in)
		}
	}
	return out
}

// managerKinds are the kinds a Kueue manager runs as, top-level kinds first
// so that a Deployment's own labels are recorded before its Pods are merged
// in.
var managerKinds = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "", Version: "v1", Resource: "pods"},
}

// managers finds every Kueue controller manager by the singleton guard's
// fingerprint, in every namespace, ephemeral containers included, and merges
// each controller's ReplicaSets and Pods into it.
func (g *gatherer) managers(ctx context.Context) ([]Manager, error) {
	found := map[kueuecontroller.Identity]*Manager{}
	for _, gvr := range managerKinds {
		err := g.reader.Each(ctx, gvr, live.Options{}, func(obj *unstructured.Unstructured) error {
			match, ok := kueuecontroller.Detect(obj)
			if !ok {
				return nil
			}
			id := kueuecontroller.IdentityOf(obj)
			m := found[id]
			if m == nil {
				m = &Manager{Identity: id}
				found[id] = m
			}
			// The controller itself says best what it runs; its Pods speak
			// for it only when it was not listed (deleted, or not readable).
			if m.Labels == nil || obj.GetKind() == id.Kind {
				m.Reasons = match.Reasons
				describe(m, obj, match)
			}
			return nil
		})
		if err != nil {
			// Without one kind, a manager may be missed: no verdict.
			return nil, err
		}
	}
	out := make([]Manager, 0, len(found))
	for _, m := range found {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Manager) int { return cmp.Compare(a.Identity.String(), b.Identity.String()) })
	return out, nil
}

// describe records what the object says about its manager: its labels, the
// manager container's image and --feature-gates, the ConfigMaps it mounts.
func describe(m *Manager, obj *unstructured.Unstructured, match *kueuecontroller.Match) {
	m.Labels, m.Annotations, m.Version = obj.GetLabels(), obj.GetAnnotations(), match.Version
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	spec := []string{"spec", "template", "spec"}
	if obj.GetKind() == "Pod" {
		spec = []string{"spec"}
	}
	m.ConfigMaps = nil
	volumes, _, _ := unstructured.NestedSlice(obj.Object, append(spec, "volumes")...)
	for _, v := range volumes {
		if name, _, _ := unstructured.NestedString(asMap(v), "configMap", "name"); name != "" {
			m.ConfigMaps = append(m.ConfigMaps, name)
		}
	}
	for _, key := range workload.ContainerLists {
		containers, _, _ := unstructured.NestedSlice(obj.Object, append(spec, key)...)
		for _, c := range containers {
			cm := asMap(c)
			if name, _ := cm["name"].(string); name != match.Container && match.Container != "" {
				continue
			}
			m.Image, _ = cm["image"].(string)
			args, _, _ := unstructured.NestedStringSlice(cm, "args")
			m.FeatureGates = featureGatesArg(args)
			return
		}
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// featureGatesArg is the value of --feature-gates (or -feature-gates), in the
// =value or the two-word form; the last one wins, as with Go's flag package.
func featureGatesArg(args []string) string {
	value := ""
	for i, a := range args {
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "feature-gates" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			v = args[i+1]
		}
		value = v
	}
	return value
}

// ParseFeatureGates reads "A=true,B=false" as Kueue's --feature-gates does.
func ParseFeatureGates(s string) (map[string]bool, error) {
	gates := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("feature gate %q: want NAME=true|false", part)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("feature gate %q: want NAME=true|false", part)
		}
		gates[strings.TrimSpace(k)] = on
	}
	return gates, nil
}

// kueueConfig reads the Configuration the manager mounts: the first of its
// ConfigMaps that holds Kueue's key.
func (g *gatherer) kueueConfig(ctx context.Context, m *Manager) KueueConfiguration {
	kc := KueueConfiguration{Manager: m.Identity, NotFound: true}
	for _, name := range m.ConfigMaps {
		cm, err := g.kube.CoreV1().ConfigMaps(m.Identity.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			kc.Err, kc.NotFound = fmt.Errorf("reading ConfigMap %s/%s: %w", m.Identity.Namespace, name, err), false
			return kc
		}
		data, ok := cm.Data[cluster.KueueConfigKey]
		if !ok {
			continue
		}
		kc.Source, kc.NotFound = m.Identity.Namespace+"/"+name, false
		kc.Err = parseKueueConfig(&kc, data, m.Identity.Namespace, m.FeatureGates)
		return kc
	}
	return kc
}

func parseKueueConfig(kc *KueueConfiguration, data, namespace, gatesArg string) error {
	cfg, err := cluster.ParseKueueConfig(data, namespace)
	if err != nil {
		return fmt.Errorf("ConfigMap %s: %w", kc.Source, err)
	}
	kc.External = cfg.ExternalFrameworks
	for _, fw := range cfg.Frameworks {
		if !slices.Contains(kc.External, fw) {
			kc.Frameworks = append(kc.Frameworks, fw)
		}
	}
	kc.ManageJobsWithoutQueueName = cfg.ManageJobsWithoutQueueName
	kc.FeatureGates = map[string]bool{}
	maps.Copy(kc.FeatureGates, cfg.FeatureGates)
	args, err := ParseFeatureGates(gatesArg)
	if err != nil {
		return fmt.Errorf("the manager's --feature-gates: %w", err)
	}
	maps.Copy(kc.FeatureGates, args)
	return nil
}

// countKueue counts the objects of a Kueue resource (0 when not served).
func (g *gatherer) countKueue(ctx context.Context, resource string) (int, error) {
	gvr, ok, err := g.reader.FirstServed(integrations.KueueGroup, integrations.KueueAPIVersions, resource)
	if err != nil || !ok {
		return 0, err
	}
	n := 0
	err = g.reader.Each(ctx, gvr, live.Options{}, func(*unstructured.Unstructured) error { n++; return nil })
	return n, err
}

// workloads lists the queued workloads of the given kinds: by their queue
// label where Kueue reads it, and by the Kueue Workloads whose controller is
// one of them (Kueue managing a workload without a label,
// manageJobsWithoutQueueName).
func (g *gatherer) workloads(ctx context.Context, kinds []*integrations.Integration) ([]QueuedWorkload, []string, []string, error) {
	var out []QueuedWorkload
	var listed, notServed []string
	// exists holds the UID of every object listed: a Workload counts only for
	// an owner that exists (an orphan waits for the garbage collector; an
	// owner reference can name anything).
	exists := map[types.UID]bool{}
	queued := map[types.UID]bool{}
	byKind := map[schema.GroupKind]*integrations.Integration{}
	for _, in := range kinds {
		gvr := in.GVK.GroupVersion().WithResource(in.Resource)
		served, err := g.reader.Served(gvr)
		if err != nil {
			return out, listed, notServed, err
		}
		if !served {
			notServed = append(notServed, in.Key())
			continue
		}
		listed = append(listed, in.Key())
		byKind[in.GVK.GroupKind()] = in
		err = g.reader.Each(ctx, gvr, live.Options{}, func(obj *unstructured.Unstructured) error {
			exists[obj.GetUID()] = true
			if q := workload.QueueName(obj, in); q != "" {
				out = append(out, QueuedWorkload{Integration: in, Namespace: obj.GetNamespace(), Name: obj.GetName(), Queue: q})
				queued[obj.GetUID()] = true
			}
			return nil
		})
		if err != nil {
			return out, listed, notServed, err
		}
	}
	gvr, ok, err := g.reader.FirstServed(integrations.KueueGroup, integrations.KueueAPIVersions, "workloads")
	if err != nil || !ok || len(byKind) == 0 {
		return out, listed, notServed, err
	}
	err = g.reader.Each(ctx, gvr, live.Options{}, func(wl *unstructured.Unstructured) error {
		owner := metav1.GetControllerOfNoCopy(wl)
		if owner == nil {
			return nil
		}
		in := byKind[integrations.ParseGroupKind(owner.APIVersion, owner.Kind)]
		if in == nil || !exists[owner.UID] || queued[owner.UID] {
			return nil
		}
		queued[owner.UID] = true
		q, _, _ := unstructured.NestedString(wl.Object, "spec", "queueName")
		out = append(out, QueuedWorkload{Integration: in, Namespace: wl.GetNamespace(), Name: owner.Name, Queue: q,
			Workload: wl.GetNamespace() + "/" + wl.GetName()})
		return nil
	})
	return out, listed, notServed, err
}

// guards reads kueue-guard's configuration: the file, or every ConfigMap the
// chart rendered (labelled app.kubernetes.io/part-of=kueue-guard, key
// config.yaml) in any namespace.
func (g *gatherer) guards(ctx context.Context, file string) ([]GuardConfig, error) {
	if file != "" {
		c, err := config.Load(file)
		return []GuardConfig{{Source: file, Config: c, Err: err}}, nil
	}
	cms, err := live.ListAs[corev1.ConfigMap](ctx, g.reader, corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		live.Options{LabelSelector: guardPartOfLabel})
	if err != nil {
		return nil, err
	}
	var out []GuardConfig
	for _, cm := range cms {
		data, ok := cm.Data[guardConfigKey]
		if !ok {
			continue
		}
		gc := GuardConfig{Source: "ConfigMap " + cm.Namespace + "/" + cm.Name, Namespace: cm.Namespace,
			Release: cm.Labels["app.kubernetes.io/instance"]}
		gc.Config, gc.Err = config.Decode([]byte(data))
		out = append(out, gc)
	}
	slices.SortFunc(out, func(a, b GuardConfig) int { return cmp.Compare(a.Source, b.Source) })
	return out, nil
}
