package policies

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// matchCustom is the METADATA custom key that says what a policy applies to.
const matchCustom = "match"

// Match is what a policy applies to, from its METADATA custom.match, in the
// spirit of Gatekeeper's match: a request is evaluated by the policy only when
// every criterion it sets holds. A policy without custom.match applies to every
// workload the policy step judges. The engine indexes policies by kind and
// operation when it loads a set, so policies that do not apply to a request cost
// it nothing.
type Match struct {
	// Kinds are the workload kinds the policy applies to; empty means every kind.
	Kinds []KindMatch `json:"kinds,omitempty"`
	// Namespaces are the namespaces it applies to; empty means every namespace.
	// An entry ending in * matches by prefix (team-*).
	Namespaces []string `json:"namespaces,omitempty"`
	// ExcludedNamespaces are namespaces it never applies to, with the same
	// prefix form; they win over Namespaces and NamespaceSelector.
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// NamespaceSelector selects namespaces by their labels (kubernetes.io/metadata.name
	// included, as the API server sets it on every namespace).
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// LabelSelector selects workloads by the object's own metadata.labels.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Operations are CREATE and/or UPDATE; empty means both.
	Operations []admissionv1.Operation `json:"operations,omitempty"`
	// Updates are the changes that make the policy judge an UPDATE; empty
	// means every UPDATE. A policy that reports nothing on an update without
	// one of them declares it, and such updates are decided without
	// evaluating it: see UpdateChange.
	Updates []UpdateChange `json:"updates,omitempty"`

	nsSelector  labels.Selector
	objSelector labels.Selector
}

// KindMatch selects kinds by API group and kind name, as Gatekeeper's match
// does (apiGroups and kinds lists), or one group and kind (group, kind); "*"
// matches any, and "" is the core group (bare Pods).
type KindMatch struct {
	APIGroups []string `json:"apiGroups,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	Group     *string  `json:"group,omitempty"`
	Kind      string   `json:"kind,omitempty"`
}

// UpdateChange is a change an UPDATE makes to the workload, as kueue-guard
// computes it from the old and new objects (input.workload, input.oldWorkload).
// An update whose old object cannot be summarized has every change.
type UpdateChange string

const (
	// ChangeGrows: the workload asks Kueue for more (input.workload.grows).
	ChangeGrows UpdateChange = "grows"
	// ChangeQueueName: the queue Kueue reads (input.workload.queueName) changes.
	ChangeQueueName UpdateChange = "queueName"
	// ChangePriority: the priority class or its source changes
	// (input.workload.priority, priorityClass).
	ChangePriority UpdateChange = "priority"
	// ChangeSpecs: a pod or Job spec, where they are, or claimsUncounted
	// changes (input.workload.podSpecs, podSpecPaths, jobSpecs, jobSpecPaths,
	// claimsUncounted).
	ChangeSpecs UpdateChange = "specs"
)

var updateChanges = []UpdateChange{ChangeGrows, ChangeQueueName, ChangePriority, ChangeSpecs}

// Subject is what the index matches a request by.
type Subject struct {
	Kind      schema.GroupKind
	Operation admissionv1.Operation
	Namespace string
	// NamespaceLabels are the namespace's labels (nil when the namespace is not
	// known: only its name label is then matched).
	NamespaceLabels map[string]string
	// Labels are the object's own labels.
	Labels map[string]string
	// Size is the length of the JSON the object was received in (see
	// admission.Request.Size), or 0 when not known; only small inputs are
	// kept to try new policy sets on.
	Size int
}

// parseMatch reads custom.match. Unknown keys are refused, so that a typo
// (namespaceSelecter) cannot silently widen a policy to every request.
func parseMatch(v any) (*Match, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("METADATA custom.%s: %w", matchCustom, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	m := &Match{}
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("METADATA custom.%s must be an object with kinds, namespaces, excludedNamespaces, "+
			"namespaceSelector, labelSelector, operations and updates: %v", matchCustom, err)
	}
	for _, op := range m.Operations {
		if op != admissionv1.Create && op != admissionv1.Update {
			return nil, fmt.Errorf("METADATA custom.%s.operations: %q is not CREATE or UPDATE, the operations policies judge", matchCustom, op)
		}
	}
	for _, c := range m.Updates {
		if !slices.Contains(updateChanges, c) {
			return nil, fmt.Errorf("METADATA custom.%s.updates: %q is not one of %v", matchCustom, c, updateChanges)
		}
	}
	for i := range m.Kinds {
		k := &m.Kinds[i]
		if k.Group != nil || k.Kind != "" {
			if k.Group == nil || k.Kind == "" || len(k.APIGroups) > 0 || len(k.Kinds) > 0 {
				return nil, fmt.Errorf("METADATA custom.%s.kinds[%d] needs group and kind, or apiGroups and kinds, not a mix", matchCustom, i)
			}
			k.APIGroups, k.Kinds = []string{*k.Group}, []string{k.Kind}
		}
		if len(k.APIGroups) == 0 || len(k.Kinds) == 0 {
			return nil, fmt.Errorf("METADATA custom.%s.kinds[%d] needs apiGroups and kinds (\"*\" for any)", matchCustom, i)
		}
		for _, kind := range k.Kinds {
			if kind != "*" && !catalogKind(kind) {
				return nil, fmt.Errorf("METADATA custom.%s.kinds[%d]: %q is not a workload kind kueue-guard judges", matchCustom, i, kind)
			}
		}
	}
	for _, ns := range append(slices.Clone(m.Namespaces), m.ExcludedNamespaces...) {
		if ns == "" || strings.Contains(strings.TrimSuffix(ns, "*"), "*") {
			return nil, fmt.Errorf("METADATA custom.%s: namespace %q must be a name or a prefix ending in *", matchCustom, ns)
		}
	}
	if m.nsSelector, err = selector(m.NamespaceSelector, "namespaceSelector"); err != nil {
		return nil, err
	}
	if m.objSelector, err = selector(m.LabelSelector, "labelSelector"); err != nil {
		return nil, err
	}
	return m, nil
}

func selector(s *metav1.LabelSelector, what string) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("METADATA custom.%s.%s: %w", matchCustom, what, err)
	}
	return sel, nil
}

func catalogKind(kind string) bool {
	for _, in := range integrations.All() {
		if in.GVK.Kind == kind {
			return true
		}
	}
	return false
}

// static reports whether the parts of the match known when the set loads —
// kind and operation — hold for a request.
func (m *Match) static(gk schema.GroupKind, op admissionv1.Operation) bool {
	if m == nil {
		return true
	}
	if len(m.Operations) > 0 && !slices.Contains(m.Operations, op) {
		return false
	}
	if len(m.Kinds) == 0 {
		return true
	}
	for _, k := range m.Kinds {
		if anyOf(k.APIGroups, gk.Group) && anyOf(k.Kinds, gk.Kind) {
			return true
		}
	}
	return false
}

// dynamic reports whether the request-dependent parts hold: namespaces and
// selectors.
func (m *Match) dynamic(s *Subject) bool {
	if m == nil {
		return true
	}
	if namespaceIn(m.ExcludedNamespaces, s.Namespace) {
		return false
	}
	if len(m.Namespaces) > 0 && !namespaceIn(m.Namespaces, s.Namespace) {
		return false
	}
	if m.nsSelector != nil && !m.nsSelector.Matches(namespaceLabels(s)) {
		return false
	}
	if m.objSelector != nil && !m.objSelector.Matches(labels.Set(s.Labels)) {
		return false
	}
	return true
}

// judgesUpdate reports whether the policy judges an UPDATE with these changes.
func (m *Match) judgesUpdate(changes map[UpdateChange]bool) bool {
	if m == nil || len(m.Updates) == 0 {
		return true
	}
	for _, c := range m.Updates {
		if changes[c] {
			return true
		}
	}
	return false
}

// hasDynamic reports whether dynamic can ever be false.
func (m *Match) hasDynamic() bool {
	return m != nil && (len(m.Namespaces) > 0 || len(m.ExcludedNamespaces) > 0 || m.nsSelector != nil || m.objSelector != nil)
}

// namespaceLabels are the namespace's labels with the name label the API server
// sets on every namespace, so a selector on it works before the namespace is
// cached.
func namespaceLabels(s *Subject) labels.Set {
	out := make(labels.Set, len(s.NamespaceLabels)+1)
	maps.Copy(out, s.NamespaceLabels)
	out[corev1.LabelMetadataName] = s.Namespace
	return out
}

func anyOf(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func namespaceIn(patterns []string, ns string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(ns, prefix) {
				return true
			}
		} else if p == ns {
			return true
		}
	}
	return false
}
