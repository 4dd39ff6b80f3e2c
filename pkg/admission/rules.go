package admission

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// RuleNamespace is the id namespace of kueue-guard's own rules, built-in and
// shipped Rego policies alike.
//
// The id scheme, for every rule a report names: a rule id is a dotted path of
// snake_case names. A Rego policy's id is its package path without "data."
// (kueue_guard.fits_cluster_queue, acme.gpu_budget); a built-in rule's id is
// RuleNamespace + "." + its name (kueue_guard.untrusted_owner). A Rego policy
// cannot take a built-in rule's id.
const RuleNamespace = "kueue_guard"

// Rule is one built-in rule: everything the reviewer's rule list, the SARIF
// output, the chart's generated admission policies and the docs' rule table say
// about it. Each rule is registered, with Register, in the file that holds its
// check.
type Rule struct {
	// ID follows the id scheme above.
	ID string
	// Title is a short name (SARIF's rule name, the docs' table).
	Title string
	// Doc is a one-line description: what the rule guarantees and what
	// configures it.
	Doc string
	// Enforcement is what a violation does unless configuration says otherwise.
	Enforcement Enforcement
	// Check is the name of the step (Step.Name) that enforces the rule; empty
	// for a rule only its CEL twin enforces (the webhook never sees what it
	// judges).
	Check string
	// CEL is the rule's twin that the API server evaluates itself, so that
	// the rule holds while no kueue-guard replica answers.
	CEL *CELTwin
	// WebhookOnly says, for a rule without a twin, why only the webhook can
	// judge it (what it reads that a request does not carry).
	WebhookOnly string
}

// CELTwin is a ValidatingAdmissionPolicy the chart installs for a rule: the
// API server never sends some objects (webhook configurations) to admission
// webhooks, but it evaluates policies on them.
type CELTwin struct {
	// Name is appended to the release's full name to name the policy.
	Name string
	// Covers says which part of what the webhook judges the twin judges,
	// when not all of it (the rest reads the cluster or walks the object).
	Covers string
	// ValuesKey is the chart value (a map with `enabled`) that switches the
	// policy on; empty installs it always.
	ValuesKey string
	// AlsoUnder are the rules the webhook denies some of the same requests
	// under, when the cluster state it reads makes another step the judge
	// (Kueue away: kueue_absent); the parity suite accepts them.
	AlsoUnder []string
	// Action, when set, names the chart-computed binding action (Deny or
	// Warn) that follows the rule's configured enforcement; empty is Deny.
	Action string
	// Params are variables whose expressions the chart computes from its
	// values. The generated file carries ParamPlaceholder(name) in their place;
	// the chart knows each name.
	Params []string
	// MatchConstraints, Variables and Validations are the policy's, as in
	// admissionregistration.k8s.io/v1.
	MatchConstraints *admissionregistrationv1.MatchResources    `json:"matchConstraints"`
	Variables        []admissionregistrationv1.Variable         `json:"variables,omitempty"`
	Validations      []admissionregistrationv1.Validation       `json:"validations"`
	FailurePolicy    *admissionregistrationv1.FailurePolicyType `json:"failurePolicy,omitempty"`
}

// ParamPlaceholder is what a generated CEL twin holds in place of a parameter's
// expression.
func ParamPlaceholder(name string) string { return "__PARAM_" + name + "__" }

var ruleID = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

var registry struct {
	sync.RWMutex
	rules map[string]Rule
}

// Register adds a built-in rule and returns its id, for the rule's constant.
// It panics on an id that breaks the scheme or is taken, or a rule without a
// title, doc, enforcement or check: a mistake found the moment the package loads.
func Register(r Rule) string {
	if err := validRule(r); err != nil {
		panic(err)
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.rules == nil {
		registry.rules = map[string]Rule{}
	}
	if _, taken := registry.rules[r.ID]; taken {
		panic(fmt.Sprintf("rule %s registered twice", r.ID))
	}
	registry.rules[r.ID] = r
	return r.ID
}

// Unregister removes a rule; for tests that register one of their own.
func Unregister(id string) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.rules, id)
}

func validRule(r Rule) error {
	switch {
	case !ruleID.MatchString(r.ID):
		return fmt.Errorf("rule id %q: want dotted snake_case, e.g. %s.my_rule", r.ID, RuleNamespace)
	case r.Title == "" || r.Doc == "" || (r.Check == "" && r.CEL == nil):
		return fmt.Errorf("rule %s needs a title, a doc and a check (a step, or a CEL twin)", r.ID)
	case r.Enforcement != EnforcementDeny && r.Enforcement != EnforcementWarn && r.Enforcement != EnforcementDryRun:
		return fmt.Errorf("rule %s: enforcement %q", r.ID, r.Enforcement)
	}
	return nil
}

// Rules returns every built-in rule, sorted by id.
func Rules() []Rule {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Rule, 0, len(registry.rules))
	for _, r := range registry.rules {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Rule) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// LookupRule finds a built-in rule by id.
func LookupRule(id string) (Rule, bool) {
	registry.RLock()
	defer registry.RUnlock()
	r, ok := registry.rules[id]
	return r, ok
}
