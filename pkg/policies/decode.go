package policies

import (
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
)

// Finding is one result of one policy rule.
type Finding struct {
	Policy *Policy
	// Rule is deny or warn.
	Rule string
	// Message is the rule's msg (the policy's title when it is empty).
	Message string
	// Field is the field the result names (its "field", in field.Path's form or
	// with a quoted key), or nil.
	Field *field.Path
	// Enforcement is what the finding does: the policy's enforcement for deny
	// results, warn for warn results, dryrun for both under a dryrun policy.
	Enforcement admission.Enforcement
}

// decode reads [[deny, warn], ...] for the given policies into res. A policy whose
// results are malformed is a failure of that policy.
func decode(res *Result, policies []*Policy, rs rego.ResultSet) {
	if len(rs) == 0 {
		for _, p := range policies {
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: "internal error: the evaluation query was undefined",
				Code: reasonEvaluation, Err: errors.New("undefined result")})
		}
		return
	}
	t, _ := rs[0].Bindings[resultVar].(*ast.Term)
	var pairs *ast.Array
	if t != nil {
		pairs, _ = t.Value.(*ast.Array)
	}
	for i, p := range policies {
		var pair *ast.Array
		if pairs != nil && i < pairs.Len() {
			pair, _ = pairs.Elem(i).Value.(*ast.Array)
		}
		if pair == nil || pair.Len() != 2 {
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: "internal error: unexpected evaluation result",
				Code: reasonEvaluation, Err: errors.New("unexpected result shape")})
			continue
		}
		var found []Finding
		var bad error
		for j, rule := range []string{denyRule, warnRule} {
			s, ok := pair.Elem(j).Value.(ast.Set)
			if !ok {
				bad = fmt.Errorf("%s is not a set", rule)
				break
			}
			sorted := s.Sorted()
			for k := range sorted.Len() {
				f, err := finding(p, rule, sorted.Elem(k))
				if err != nil {
					bad = err
					break
				}
				found = append(found, f)
			}
			if bad != nil {
				break
			}
		}
		if bad != nil {
			res.Failures = append(res.Failures, Failure{Policy: p, Reason: shorten(bad.Error()), Code: reasonEvaluation, Err: bad})
			continue
		}
		res.Findings = append(res.Findings, found...)
	}
}

var (
	msgKey   = ast.StringTerm("msg")
	fieldKey = ast.StringTerm("field")
)

// finding reads one element of a deny or warn set: a string, or an object with a
// string msg and an optional string field.
func finding(p *Policy, rule string, t *ast.Term) (Finding, error) {
	f := Finding{Policy: p, Rule: rule, Enforcement: effectiveEnforcement(rule, p.Enforcement)}
	switch v := t.Value.(type) {
	case ast.String:
		f.Message = string(v)
	case ast.Object:
		m := v.Get(msgKey)
		if m == nil {
			return f, fmt.Errorf("%s result %v has no msg", rule, shortTerm(t))
		}
		s, ok := m.Value.(ast.String)
		if !ok {
			return f, fmt.Errorf("%s result msg %v is not a string", rule, shortTerm(m))
		}
		f.Message = string(s)
		if fv := v.Get(fieldKey); fv != nil {
			fs, ok := fv.Value.(ast.String)
			if !ok {
				return f, fmt.Errorf("%s result field %v is not a string", rule, shortTerm(fv))
			}
			f.Field = fieldpath.Parse(string(fs))
		}
	default:
		return f, fmt.Errorf("%s results must be strings or objects with msg, got %s %v", rule, ast.ValueName(v), shortTerm(t))
	}
	if f.Message == "" {
		f.Message = p.Title
		if f.Message == "" {
			f.Message = "violated"
		}
	}
	return f, nil
}

func shortTerm(t *ast.Term) string { return truncate(t.String(), 60) }

// effectiveEnforcement combines the rule with the policy's enforcement: warn
// results only ever warn, and a dryrun policy never changes a response.
func effectiveEnforcement(rule string, policy admission.Enforcement) admission.Enforcement {
	switch {
	case policy == admission.EnforcementDryRun:
		return admission.EnforcementDryRun
	case rule == warnRule:
		return admission.EnforcementWarn
	}
	return policy
}
