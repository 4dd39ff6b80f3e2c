package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// The answers, read in one place: kueue-guard's (summarized for the bodies
// table, its policies' part for the checks), OPA's, and the reference the
// harness evaluates itself. OPA's findings are compared with kueue-guard's by
// count per policy, kueue-guard's with the reference's by message.

// policyAnswer is the policies' part of a validating answer: whether the request
// is allowed, and the policy findings that reach the client as kueue-guard
// renders them, "[policy-id] message", sorted. Built-in rules' causes and
// warnings are left out, but they count in Allowed: a request a built-in rule
// denies is one the policies never judged, which the decision check must see.
type policyAnswer struct {
	Allowed           bool
	Denials, Warnings []string
}

// admissionAnswer summarizes an AdmissionReview answer for the bodies table and
// reads its policy findings: denial causes ("Forbidden: [id] message") and
// warnings ("[id] message") of the given policies.
func admissionAnswer(raw []byte, policyIDs []string) (summary string, ans policyAnswer, err error) {
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &ar); err != nil {
		return "", ans, fmt.Errorf("undecodable answer: %w", err)
	}
	r := ar.Response
	if r == nil {
		return "", ans, errors.New("the answer has no response")
	}
	ans.Allowed = r.Allowed
	var parts []string
	if r.Allowed {
		parts = append(parts, "allowed")
	} else {
		causes := 0
		if r.Result != nil && r.Result.Details != nil {
			causes = len(r.Result.Details.Causes)
			for _, c := range r.Result.Details.Causes {
				ans.Denials = appendPolicyText(ans.Denials, c.Message, policyIDs)
			}
		}
		parts = append(parts, fmt.Sprintf("denied (%s)", plural(causes, "cause")))
	}
	if len(r.Patch) > 0 {
		var ops []json.RawMessage
		_ = json.Unmarshal(r.Patch, &ops)
		parts = append(parts, fmt.Sprintf("patch of %s", plural(len(ops), "operation")))
	}
	if len(r.Warnings) > 0 {
		parts = append(parts, plural(len(r.Warnings), "warning"))
		for _, w := range r.Warnings {
			ans.Warnings = appendPolicyText(ans.Warnings, w, policyIDs)
		}
	}
	ans.sort()
	return strings.Join(parts, ", "), ans, nil
}

// appendPolicyText appends msg from its "[id] " on when a policy's id starts it
// there: a denial cause carries its type in front ("Forbidden: ").
func appendPolicyText(out []string, msg string, policyIDs []string) []string {
	for _, id := range policyIDs {
		if i := strings.Index(msg, "["+id+"] "); i >= 0 {
			return append(out, msg[i:])
		}
	}
	return out
}

// referenceAnswer is what kueue-guard must answer, from the policies' full
// evaluation: deny findings deny, rendered as the handler renders a denial;
// warn findings become warnings, rendered by the policy step's own
// WarningText; dry-run findings reach no client. A failed evaluation has no
// reference: the policies must evaluate on every request of the check.
func referenceAnswer(res *policies.Result) (policyAnswer, error) {
	if len(res.Failures) > 0 {
		f := res.Failures[0]
		return policyAnswer{}, fmt.Errorf("the reference evaluation failed (%s): %s", f.PolicyID(), f.Reason)
	}
	a := policyAnswer{Allowed: true}
	for _, f := range res.Findings {
		switch f.Enforcement {
		case admission.EnforcementDeny:
			a.Allowed = false
			a.Denials = append(a.Denials, "["+f.Policy.ID+"] "+f.Message)
		case admission.EnforcementWarn:
			a.Warnings = append(a.Warnings, policies.WarningText(f.Policy.ID, f.Message))
		}
	}
	a.sort()
	return a, nil
}

func (a *policyAnswer) sort() {
	slices.Sort(a.Denials)
	slices.Sort(a.Warnings)
}

// counts are the findings of each policy, for the comparison with OPA's.
func (a policyAnswer) counts(policyIDs []string) map[string]int {
	out := map[string]int{}
	for _, text := range slices.Concat(a.Denials, a.Warnings) {
		for _, id := range policyIDs {
			if strings.HasPrefix(text, "["+id+"] ") {
				out[id]++
			}
		}
	}
	return out
}

// diff describes how got differs from want, or is empty when they agree.
func (a policyAnswer) diff(want policyAnswer) string {
	var parts []string
	if a.Allowed != want.Allowed {
		parts = append(parts, fmt.Sprintf("allowed %v, want %v", a.Allowed, want.Allowed))
	}
	if !slices.Equal(a.Denials, want.Denials) {
		parts = append(parts, fmt.Sprintf("denials %q, want %q", a.Denials, want.Denials))
	}
	if !slices.Equal(a.Warnings, want.Warnings) {
		parts = append(parts, fmt.Sprintf("warnings %q, want %q", a.Warnings, want.Warnings))
	}
	return strings.Join(parts, "; ")
}

// opaAnswer counts the findings of each policy in OPA's answer: result is one
// [deny, warn] pair per policy, in policyIDs' order.
func opaAnswer(raw []byte, policyIDs []string) (map[string]int, error) {
	var out struct {
		Result [][][]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("unexpected answer: %w", err)
	}
	if len(out.Result) != len(policyIDs) {
		return nil, fmt.Errorf("the answer has %d policies' results, want %d", len(out.Result), len(policyIDs))
	}
	findings := map[string]int{}
	for i, pair := range out.Result {
		for _, set := range pair {
			findings[policyIDs[i]] += len(set)
		}
	}
	return findings, nil
}

// countsDiff describes how OPA's findings per policy differ from kueue-guard's,
// or is empty when they agree.
func countsDiff(policyIDs []string, guard, opa map[string]int) string {
	var parts []string
	for _, id := range policyIDs {
		if guard[id] != opa[id] {
			parts = append(parts, fmt.Sprintf("policy %s: kueue-guard reports %d findings, OPA %d", id, guard[id], opa[id]))
		}
	}
	return strings.Join(parts, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
