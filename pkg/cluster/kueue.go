package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
)

// Kueue's manager configuration lives in a ConfigMap in Kueue's namespace under
// this key (named "<release>-manager-config" by Kueue's chart).
const (
	KueueConfigKey            = "controller_manager_config.yaml"
	KueueDefaultConfigMapName = "kueue-manager-config"
	// kueueDefaultFramework is what Kueue enables when its Configuration lists none.
	kueueDefaultFramework = "batch/job"
)

// kueueIntegrations is the part of Kueue's Configuration (v1beta1 and v1beta2
// agree on it) that kueue-guard follows.
type kueueIntegrations struct {
	Namespace    *string `json:"namespace"`
	Integrations *struct {
		Frameworks         []string `json:"frameworks"`
		ExternalFrameworks []string `json:"externalFrameworks"`
	} `json:"integrations"`
	ManageJobsWithoutQueueName   bool                   `json:"manageJobsWithoutQueueName"`
	ManagedJobsNamespaceSelector *metav1.LabelSelector  `json:"managedJobsNamespaceSelector"`
	Resources                    *configapi.Resources   `json:"resources"`
	FeatureGates                 map[string]bool        `json:"featureGates"`
	FairSharing                  *configapi.FairSharing `json:"fairSharing"`
}

// KueueConfig is what kueue-guard follows of Kueue's Configuration, with
// Kueue's defaults applied.
type KueueConfig struct {
	// Frameworks are the enabled integrations (frameworks, then
	// externalFrameworks in Kueue's "Kind.version.group" form).
	Frameworks []string
	// ExternalFrameworks are the externalFrameworks among them.
	ExternalFrameworks []string
	// FeatureGates are the feature gates the Configuration sets (Kueue's
	// --feature-gates flag, where a manager passes one, goes over them).
	FeatureGates map[string]bool
	// ManageJobsWithoutQueueName makes Kueue hold workloads that have no queue.
	ManageJobsWithoutQueueName bool
	// ManagedJobsNamespaceSelector selects the namespaces whose pod-based
	// workloads (Pods, Deployments, StatefulSets, LeaderWorkerSets) Kueue
	// manages at all; elsewhere it only modulates ManageJobsWithoutQueueName.
	// Kueue's default leaves out kube-system and its own namespace.
	ManagedJobsNamespaceSelector labels.Selector
	// Resources is Kueue's resources section: excluded prefixes and
	// transformations it applies before charging quota.
	Resources configapi.Resources
	// FairSharing is Kueue's fairSharing section (nil: off); its scheduler
	// and preemption follow it.
	FairSharing *configapi.FairSharing
}

// ParseKueueConfig reads Kueue's Configuration as Kueue's manager in
// kueueNamespace would, with its defaults.
func ParseKueueConfig(data, kueueNamespace string) (*KueueConfig, error) {
	var raw kueueIntegrations
	if err := yaml.Unmarshal([]byte(data), &raw); err != nil {
		return nil, fmt.Errorf("reading Kueue's Configuration: %w", err)
	}
	ns := kueueNamespace
	if raw.Namespace != nil && *raw.Namespace != "" {
		ns = *raw.Namespace
	}
	ls := raw.ManagedJobsNamespaceSelector
	if ls == nil {
		ls = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", ns}}}}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("reading Kueue's managedJobsNamespaceSelector: %w", err)
	}
	cfg := &KueueConfig{Frameworks: raw.frameworks(), ManageJobsWithoutQueueName: raw.ManageJobsWithoutQueueName,
		ManagedJobsNamespaceSelector: sel, FeatureGates: raw.FeatureGates, FairSharing: raw.FairSharing}
	if raw.Integrations != nil {
		cfg.ExternalFrameworks = raw.Integrations.ExternalFrameworks
	}
	if raw.Resources != nil {
		cfg.Resources = *raw.Resources
	}
	return cfg, nil
}

// ManagesNamespace reports whether Kueue manages a namespace's pod-based
// workloads (its managedJobsNamespaceSelector, which also modulates
// manageJobsWithoutQueueName for every kind). The namespace's own labels are
// read from the view, with the kubernetes.io/metadata.name label the API server
// sets on every namespace.
func (cfg *KueueConfig) ManagesNamespace(namespace string, view View) bool {
	set := labels.Set{corev1.LabelMetadataName: namespace}
	if ns, ok := view.Namespace(namespace); ok {
		maps.Copy(set, ns.Labels)
	}
	return cfg.ManagedJobsNamespaceSelector.Matches(set)
}

// ParseKueueFrameworks reads the enabled integrations from Kueue's Configuration,
// applying Kueue's own default (batch/job only) when none are listed. External
// frameworks are returned in Kueue's "Kind.version.group" form.
func ParseKueueFrameworks(data string) ([]string, error) {
	var cfg kueueIntegrations
	if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
		return nil, fmt.Errorf("reading Kueue's Configuration: %w", err)
	}
	return cfg.frameworks(), nil
}

// frameworks applies Kueue's default (batch/job only) when none are listed.
func (cfg *kueueIntegrations) frameworks() []string {
	if cfg.Integrations == nil || len(cfg.Integrations.Frameworks) == 0 {
		out := []string{kueueDefaultFramework}
		if cfg.Integrations != nil {
			out = append(out, cfg.Integrations.ExternalFrameworks...)
		}
		return out
	}
	return append(append([]string{}, cfg.Integrations.Frameworks...), cfg.Integrations.ExternalFrameworks...)
}

// kueueConfigMap picks Kueue's manager ConfigMap among a namespace's ConfigMaps:
// the default name if present, else the first (by name) carrying the config key.
func kueueConfigMap(cms []*corev1.ConfigMap) *corev1.ConfigMap {
	var found []*corev1.ConfigMap
	for _, cm := range cms {
		if _, ok := cm.Data[KueueConfigKey]; !ok {
			continue
		}
		if cm.Name == KueueDefaultConfigMapName {
			return cm
		}
		found = append(found, cm)
	}
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b *corev1.ConfigMap) int { return cmp.Compare(a.Name, b.Name) })
	return found[0]
}

// controllersIn returns the Kueue controller managers among objects (Deployments),
// oldest first (then by namespace and name), so that "first one wins" means the
// controller that was there first.
func controllersIn(objs []*unstructured.Unstructured) []ControllerRef {
	var found []*unstructured.Unstructured
	versions := map[*unstructured.Unstructured]string{}
	for _, o := range objs {
		if m, ok := kueuecontroller.Detect(o); ok {
			found = append(found, o)
			versions[o] = m.Version
		}
	}
	slices.SortFunc(found, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time),
			cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	out := make([]ControllerRef, len(found))
	for i, o := range found {
		id := kueuecontroller.IdentityOf(o)
		out[i] = ControllerRef{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, Version: versions[o]}
	}
	return out
}
