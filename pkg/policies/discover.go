package policies

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
)

// discover finds the policies of a compiled tree: every package that defines deny
// or warn. Their METADATA is read and checked here, so that a typo in an
// enforcement mode refuses the set instead of silently enforcing "deny".
func discover(dir string, c *compiled) ([]*Policy, error) {
	names := make([]string, 0, len(c.modules))
	for n := range c.modules {
		names = append(names, n)
	}
	slices.Sort(names)
	byID := map[string]*Policy{}
	var order []string
	var probs []Problem
	for _, name := range names {
		mod := c.compiler.Modules[name]
		if mod == nil {
			continue
		}
		id := strings.TrimPrefix(mod.Package.Path.String(), "data.")
		hasDeny, hasWarn := false, false
		for _, r := range mod.Rules {
			rule, ok := policyRuleName(r)
			if !ok {
				continue
			}
			if r.Head.Key == nil && isBooleanTerm(r.Head.Value) {
				probs = append(probs, Problem{File: filepath.Join(dir, name), Line: r.Location.Row, Message: fmt.Sprintf(
					"%s must be a set of messages (%s contains msg if { ... }), not a boolean", rule, rule)})
				continue
			}
			hasDeny = hasDeny || rule == denyRule
			hasWarn = hasWarn || rule == warnRule
		}
		if _, builtin := admission.LookupRule(id); builtin && (hasDeny || hasWarn) {
			probs = append(probs, Problem{File: filepath.Join(dir, name), Line: mod.Package.Location.Row, Message: fmt.Sprintf(
				"package %s takes the id of a built-in rule; rename the package", id)})
			continue
		}
		p := byID[id]
		if p == nil {
			p = &Policy{ID: id, Enforcement: admission.EnforcementDeny, path: mod.Package.Path}
		}
		p.HasDeny = p.HasDeny || hasDeny
		p.HasWarn = p.HasWarn || hasWarn
		p.Files = append(p.Files, filepath.Join(dir, name))
		for _, a := range mod.Annotations {
			if a.Scope != "package" {
				continue
			}
			if p.Title == "" {
				p.Title = a.Title
			}
			if p.Description == "" {
				p.Description = a.Description
			}
			if v, ok := a.Custom[enforcementCustom]; ok {
				e, err := parseEnforcement(v)
				if err != nil {
					probs = append(probs, Problem{File: filepath.Join(dir, name), Line: locationRow(a.Location), Message: err.Error()})
					continue
				}
				p.Enforcement = e
			}
			if v, ok := a.Custom[severityCustom]; ok {
				sev, _ := v.(string)
				if !slices.Contains(Severities, sev) {
					probs = append(probs, Problem{File: filepath.Join(dir, name), Line: locationRow(a.Location), Message: fmt.Sprintf(
						"METADATA custom.%s must be one of %s; got %v", severityCustom, strings.Join(Severities, ", "), v)})
					continue
				}
				p.Severity = sev
			}
			if v, ok := a.Custom[matchCustom]; ok {
				if p.Match != nil {
					probs = append(probs, Problem{File: filepath.Join(dir, name), Line: locationRow(a.Location), Message: fmt.Sprintf(
						"package %s declares custom.%s more than once; keep one", id, matchCustom)})
					continue
				}
				m, err := parseMatch(v)
				if err != nil {
					probs = append(probs, Problem{File: filepath.Join(dir, name), Line: locationRow(a.Location), Message: err.Error()})
					continue
				}
				p.Match = m
			}
		}
		if byID[id] == nil {
			byID[id] = p
			order = append(order, id)
		}
	}
	if len(probs) > 0 {
		return nil, &LoadError{Dir: dir, Problems: probs}
	}
	slices.Sort(order)
	out := make([]*Policy, 0, len(order))
	for _, id := range order {
		if p := byID[id]; p.HasDeny || p.HasWarn {
			if p.Severity == "" {
				p.Severity = DefaultSeverity
			}
			p.denyDirect = p.HasDeny && multiValueOnly(c.compiler, p.path, denyRule)
			p.warnDirect = p.HasWarn && multiValueOnly(c.compiler, p.path, warnRule)
			out = append(out, p)
		}
	}
	return out, nil
}

// multiValueOnly reports whether every rule defining the policy's rule is a
// plain "rule contains x if ...": the rule is then a set that is defined (empty)
// whatever the input, and the query can read it directly instead of through a
// set comprehension, which costs an evaluation step per element.
func multiValueOnly(c *ast.Compiler, path ast.Ref, rule string) bool {
	rules := c.GetRulesWithPrefix(path.Append(ast.StringTerm(rule)))
	for _, r := range rules {
		if r.Default || len(r.Head.Ref()) != 1 || r.Head.RuleKind() != ast.MultiValue {
			return false
		}
	}
	return len(rules) > 0
}

// policyRuleName reports whether a rule defines deny or warn at the top of its
// package (deny contains msg if ..., deny := {...}).
func policyRuleName(r *ast.Rule) (string, bool) {
	ref := r.Head.Ref()
	if len(ref) != 1 {
		return "", false
	}
	v, ok := ref[0].Value.(ast.Var)
	if !ok || (v != denyRule && v != warnRule) {
		return "", false
	}
	return string(v), true
}

func isBooleanTerm(t *ast.Term) bool {
	if t == nil {
		return false
	}
	_, ok := t.Value.(ast.Boolean)
	return ok
}

func parseEnforcement(v any) (admission.Enforcement, error) {
	s, _ := v.(string)
	switch e := admission.Enforcement(s); e {
	case admission.EnforcementDeny, admission.EnforcementWarn, admission.EnforcementDryRun:
		return e, nil
	}
	return "", fmt.Errorf("METADATA custom.%s must be one of %s, %s, %s; got %v", enforcementCustom,
		admission.EnforcementDeny, admission.EnforcementWarn, admission.EnforcementDryRun, v)
}

func locationRow(l *ast.Location) int {
	if l == nil {
		return 0
	}
	return l.Row
}
