// Package admission is the one pipeline: a Request and a cluster View in, a Decision
// out. It has no HTTP in it; the webhook handlers and the offline reviewer are thin
// adapters around it, so both give the same answer for the same object.
package admission

import (
	"context"
	"fmt"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"
)

// Request is one object under admission, built from an AdmissionRequest or, by the
// reviewer, from a manifest.
type Request struct {
	UID       types.UID
	Operation admissionv1.Operation
	Kind      schema.GroupVersionKind
	// Resource is the resource requested; on a subresource (scale) it names the
	// workload's resource while Kind is the subresource's kind.
	Resource    schema.GroupVersionResource
	SubResource string
	Namespace   string
	Name        string
	UserInfo    authenticationv1.UserInfo
	// Object is the object as received. The mutating path edits a copy of it.
	Object *unstructured.Unstructured
	// Raw is Object's JSON as received, when the caller has it; patches are
	// computed against it so that they are minimal.
	Raw []byte
	// Size is the length of the JSON Object came in (of the whole review, when
	// it was decoded with it), 0 when not known; it goes with Raw.
	Size      int
	OldObject *unstructured.Unstructured
	DryRun    bool
	// Disposable says the caller never reads Object again once the pipeline
	// has it (the webhook decoded it for this request only): the mutating path
	// then edits it in place instead of copying it first.
	Disposable bool
	// Undecoded are parts of the objects the webhook left undecoded (see
	// ManagedFieldsJSON).
	Undecoded []UndecodedManagedFields

	// owned reports whether Object is the mutating path's own copy, which a
	// mutating step may edit (see writable).
	owned bool
}

// ManagedFieldsPath is where an object keeps its managedFields, the part the
// webhook may leave undecoded (UndecodedManagedFields).
var ManagedFieldsPath = []string{"metadata", "managedFields"}

// UndecodedManagedFields is an object's metadata.managedFields as received
// (their JSON, and their shape for ObjectShape), left out of the decoded
// object: the API server sends them with every object, they are about as
// large, and few checks read them.
type UndecodedManagedFields struct {
	Object *unstructured.Unstructured
	jsonmap.Deferred
}

// ManagedFieldsJSON is obj's metadata.managedFields as received when the
// webhook left them out of obj, else nil (obj holds its own, if any). It is
// bound to the object itself, so that an object the pipeline builds from
// another (a scaled workload, a copy) never takes the request's.
func (r *Request) ManagedFieldsJSON(obj *unstructured.Unstructured) []byte {
	return r.undecodedOf(obj).JSON
}

// undecodedOf is what the webhook left out of obj, if anything.
func (r *Request) undecodedOf(obj *unstructured.Unstructured) jsonmap.Deferred {
	for _, u := range r.Undecoded {
		if u.Object == obj {
			return u.Deferred
		}
	}
	return jsonmap.Deferred{}
}

// writable is the object a mutating step edits: a copy of the received one,
// made on the first edit, so that a request that needs no change costs no copy.
// A step that edits it also appends the JSON patch operations of its edits to
// the decision.
func (r *Request) writable() *unstructured.Unstructured {
	if !r.owned {
		r.Object = r.Object.DeepCopy()
		r.owned = true
	}
	return r.Object
}

// Enforcement says what a violation does to the response.
type Enforcement string

const (
	// EnforcementDeny rejects the request.
	EnforcementDeny Enforcement = "deny"
	// EnforcementWarn admits it with a kubectl warning.
	EnforcementWarn Enforcement = "warn"
	// EnforcementDryRun only logs and counts the violation.
	EnforcementDryRun Enforcement = "dryrun"
)

// Violation is one broken rule.
type Violation struct {
	// Rule identifies the rule: a step's rule name or a policy id.
	Rule string
	// Field is the field the violation is about (metadata.labels[kueue.x-k8s.io/queue-name]);
	// nil when it is about the object as a whole.
	Field *field.Path
	// Message is a short statement a user can act on.
	Message     string
	Enforcement Enforcement
}

// Decision is the pipeline's answer.
type Decision struct {
	// Patch turns the received object into the mutated one (mutating path only).
	Patch []jsonpatch.Operation
	// Object is the mutated object (mutating path only), nil when unchanged.
	Object *unstructured.Unstructured
	// Violations are every broken rule, whatever their enforcement.
	Violations []Violation
	// Warnings are returned to the client (kubectl prints them).
	Warnings []string
	// AuditAnnotations are recorded in the API server's audit log.
	AuditAnnotations map[string]string
	// Defaulted records how the queue was chosen, when the pipeline chose it.
	Defaulted *QueueChoice
}

// Allowed reports whether no violation denies the request.
func (d *Decision) Allowed() bool {
	for _, v := range d.Violations {
		if v.Enforcement == EnforcementDeny {
			return false
		}
	}
	return true
}

// Denials returns the violations that deny the request.
func (d *Decision) Denials() []Violation {
	var out []Violation
	for _, v := range d.Violations {
		if v.Enforcement == EnforcementDeny {
			out = append(out, v)
		}
	}
	return out
}

// Warn adds a violation that only warns, and its warning text.
func (d *Decision) Warn(rule string, fld *field.Path, msg string) {
	d.Violations = append(d.Violations, Violation{Rule: rule, Field: fld, Message: msg, Enforcement: EnforcementWarn})
	d.Warnings = append(d.Warnings, msg)
}

// Deny adds a violation that denies the request.
func (d *Decision) Deny(rule string, fld *field.Path, msg string) {
	d.Violations = append(d.Violations, Violation{Rule: rule, Field: fld, Message: msg, Enforcement: EnforcementDeny})
}

// Annotate records an audit annotation; keys are prefixed by the API server with
// the webhook's name.
func (d *Decision) Annotate(key, value string) {
	if d.AuditAnnotations == nil {
		d.AuditAnnotations = map[string]string{}
	}
	d.AuditAnnotations[key] = value
}

// Summary is a one-line description of the decision for logs.
func (d *Decision) Summary() string {
	switch {
	case !d.Allowed():
		rules := make([]string, 0, len(d.Violations))
		for _, v := range d.Denials() {
			rules = append(rules, v.Rule)
		}
		return "denied by " + strings.Join(rules, ",")
	case len(d.Patch) > 0:
		return "patched"
	case len(d.Warnings) > 0:
		return "allowed with warnings"
	}
	return "allowed"
}

// Target is what every step learns about the request before it runs: the catalog
// entry of the object's kind, and whether the requester is a trusted controller.
// Steps only run for catalog kinds.
type Target struct {
	Integration *integrations.Integration
	// TrustedController is decided from the request's authenticated userInfo by
	// trust.controllers, never from anything in the object.
	TrustedController bool
	// Unintegrated is a kind the install's Kueue does not integrate (the
	// integration guard's answer): Kueue neither holds nor resumes it, whatever
	// its queue, so nothing may hold it for Kueue.
	Unintegrated bool
}

// Step is one admission concern: defaulting, the integration guard, the controller
// guard, the policies. It declares the operations it handles; the pipeline runs it
// for those only. A step adds to the Decision; it returns an error only when it
// cannot decide (an infrastructure failure), never for a broken rule.
type Step interface {
	Name() string
	Handles(op admissionv1.Operation) bool
}

// MutationStep is a step of the mutating path: it may edit req.Object (the
// pipeline's working copy) and report violations.
type MutationStep interface {
	Step
	Mutate(ctx context.Context, req *Request, t Target, view cluster.View, d *Decision) error
}

// ValidationStep is a step of the validating paths: it reads the request and
// reports violations, never edits the object.
type ValidationStep interface {
	Step
	Validate(ctx context.Context, req *Request, t Target, view cluster.View, d *Decision) error
}

// createOrUpdate is what most steps handle.
func createOrUpdate(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update
}

// StepError is an infrastructure failure of a step (or a contained panic).
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("internal error in %s: %v", e.Step, e.Err) }

func (e *StepError) Unwrap() error { return e.Err }
