// Package trust decides whose word kueue-guard takes. Everything in an object is
// written by the requester, owner references included, so an owner reference
// proves nothing by itself: a namespace user can name any owner, real or not.
// kueue-guard believes that an object is part of another workload only when the
// request comes from a trusted controller (an identity the API server
// authenticated, not a field) and the owner is a kind Kueue manages.
//
// The same rule runs in two places, and both are built here: in the server
// (Matcher.Trusted, PartOfAnother) and in the webhooks' CEL match conditions
// (Matcher.CEL, OwnerCEL), which keep the API server from calling the webhooks
// for such parts at all.
package trust

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// Matcher matches requesters against trust.controllers. It is immutable and
// safe for concurrent use.
type Matcher struct {
	users    []string
	prefixes []string
	groups   []string
}

// New compiles trust.controllers entries (validated by config.Validate):
// usernames, username prefixes ending in "*", and "group:NAME".
func New(entries []string) *Matcher {
	m := &Matcher{}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e, config.GroupPrefix):
			m.groups = append(m.groups, strings.TrimPrefix(e, config.GroupPrefix))
		case strings.HasSuffix(e, "*"):
			m.prefixes = append(m.prefixes, strings.TrimSuffix(e, "*"))
		default:
			m.users = append(m.users, e)
		}
	}
	return m
}

// Trusted reports whether the requester is a trusted controller.
func (m *Matcher) Trusted(u authenticationv1.UserInfo) bool {
	if m == nil {
		return false
	}
	if slices.Contains(m.users, u.Username) {
		return true
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(u.Username, p) {
			return true
		}
	}
	for _, g := range u.Groups {
		if slices.Contains(m.groups, g) {
			return true
		}
	}
	return false
}

// CEL is Trusted as a CEL expression over an admission request's userInfo. The
// entries are literals without quotes or backslashes (config.Validate refuses
// them), so they are quoted as they are.
func (m *Matcher) CEL() string {
	var terms []string
	if len(m.users) > 0 {
		terms = append(terms, "request.userInfo.username in "+CELList(m.users))
	}
	if len(m.prefixes) > 0 {
		terms = append(terms, CELList(m.prefixes)+".exists(p, request.userInfo.username.startsWith(p))")
	}
	if len(m.groups) > 0 {
		terms = append(terms, "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in "+CELList(m.groups)+"))")
	}
	if len(terms) == 0 {
		return "false"
	}
	return "(" + strings.Join(terms, " || ") + ")"
}

// CELString quotes a string as a CEL literal; it must hold no quote or
// backslash (config.Validate refuses such trust entries; catalog names and
// Kueue's keys have none).
func CELString(s string) string { return "'" + s + "'" }

// CELList quotes strings as a CEL list literal, as CELString quotes each.
func CELList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = CELString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// ManagedOwner reports whether the object has a controller owner reference to a
// kind Kueue manages as a whole (integrations.IsManagedOwner: exact group,
// version and kind). It says nothing about whether to believe the reference.
func ManagedOwner(obj *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && integrations.IsManagedOwner(ref.APIVersion, ref.Kind) {
			return true
		}
	}
	return false
}

// PartOfAnother reports whether the webhooks' match condition keeps an object
// from the webhooks (TopLevelCEL): a trusted controller's object that
// MatchSkips. Everyone else's objects are top-level, whatever their owner
// references say.
func (m *Matcher) PartOfAnother(u authenticationv1.UserInfo, obj *unstructured.Unstructured) bool {
	return m.Trusted(u) && MatchSkips(obj)
}

// MatchSkips is PartOfAnother's object half (OwnerCEL): a controller owner of
// a kind Kueue manages (bar the kinds it may ignore,
// integrations.Integration.Ignorable), and no queue label. Such an object is
// a part of its parent or, when Kueue does not manage the parent, as
// unmanaged as it: Kueue queues the child of an unmanaged parent only by its
// own queue label, and those children reach the server, which walks the
// owners as Kueue does.
func MatchSkips(obj *unstructured.Unstructured) bool {
	if obj == nil {
		return false
	}
	// Read in place: GetLabels and GetOwnerReferences copy, on every request.
	if q, _, _ := unstructured.NestedString(obj.Object, "metadata", "labels", integrations.QueueNameLabel); q != "" {
		return false
	}
	meta, _ := obj.Object["metadata"].(map[string]any)
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		apiVersion, _ := ref["apiVersion"].(string)
		kind, _ := ref["kind"].(string)
		if ref["controller"] == true && slices.Contains(skippedOwners, apiVersion+"/"+kind) {
			return true
		}
	}
	return false
}

// skippedOwners are the "apiVersion/kind" owners OwnerCEL lists: every kind
// Kueue manages as a whole but the ones it may ignore whatever their queue.
var skippedOwners = func() []string {
	var owners []string
	for _, o := range integrations.ManagedOwners() {
		if in, ok := integrations.Lookup(integrations.ParseGroupKind(o.APIVersion, o.Kind)); ok && in.Ignorable {
			continue
		}
		owners = append(owners, o.APIVersion+"/"+o.Kind)
	}
	return owners
}()

// OwnerCEL is PartOfAnother's object half as a CEL expression over the
// admitted object.
func OwnerCEL() string {
	return fmt.Sprintf("(has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "+
		"has(r.controller) && r.controller && (r.apiVersion + '/' + r.kind) in %s) && "+
		"!(has(object.metadata.labels) && '%s' in object.metadata.labels && object.metadata.labels['%s'] != ''))",
		CELList(skippedOwners), integrations.QueueNameLabel, integrations.QueueNameLabel)
}

// TopLevelCEL is the webhooks' match condition expression: true (call the
// webhook) unless the request is a trusted controller's part of another
// workload. trusted is the requester expression, Matcher.CEL, or a placeholder
// the chart fills in from its values.
func TopLevelCEL(trusted string) string {
	return "!(" + OwnerCEL() + " && " + trusted + ")"
}
