package review

import (
	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// ruleInfo describes a rule id: a policy of the loaded set, a built-in rule of
// the admission registry, or (for a policy that failed to evaluate) the bare id.
func ruleInfo(id string, loaded map[string]*policies.Policy) RuleInfo {
	if p, ok := loaded[id]; ok {
		return RuleInfo{ID: id, Title: p.Title, Description: p.Description, Enforcement: string(p.Enforcement),
			Policy: true, Files: p.Files}
	}
	if r, ok := admission.LookupRule(id); ok {
		return builtinInfo(r)
	}
	return RuleInfo{ID: id, Enforcement: string(admission.EnforcementDeny)}
}

func builtinInfo(r admission.Rule) RuleInfo {
	return RuleInfo{ID: r.ID, Title: r.Title, Description: r.Doc, Enforcement: string(r.Enforcement)}
}

// AllRules lists every rule a review can report: each built-in rule and each
// policy of the loaded set, sorted by id.
func AllRules(loaded map[string]*policies.Policy) []RuleInfo {
	byID := map[string]RuleInfo{}
	for _, r := range admission.Rules() {
		byID[r.ID] = builtinInfo(r)
	}
	for id := range loaded {
		byID[id] = ruleInfo(id, loaded)
	}
	out := make([]RuleInfo, 0, len(byID))
	for _, id := range sortedKeys(byID) {
		out = append(out, byID[id])
	}
	return out
}
