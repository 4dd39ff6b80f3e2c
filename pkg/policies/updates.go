package policies

import (
	"reflect"
	"slices"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
)

// changesOf are the changes an UPDATE makes (see UpdateChange), computed from
// the summaries the input is built from: a policy that declares the changes
// it judges is skipped exactly when its input could not make it report.
func changesOf(req *admission.Request, f *requestFacts) map[UpdateChange]bool {
	old, cur := f.old, f.sum
	if old == nil || req.OldObject == nil {
		return map[UpdateChange]bool{ChangeGrows: true, ChangeQueueName: true, ChangePriority: true, ChangeSpecs: true}
	}
	return map[UpdateChange]bool{
		ChangeGrows:     f.grows,
		ChangeQueueName: old.QueueName != cur.QueueName,
		ChangePriority:  old.PriorityClass != cur.PriorityClass || old.Priority != cur.Priority,
		ChangeSpecs: old.ClaimsUncounted != cur.ClaimsUncounted ||
			!sameAt(req.OldObject.Object, req.Object.Object, old.PodSpecPaths, cur.PodSpecPaths) ||
			!sameAt(req.OldObject.Object, req.Object.Object, old.JobSpecPaths, cur.JobSpecPaths),
	}
}

// sameAt reports whether two objects have the same paths and the same values
// at them.
func sameAt(oldObj, newObj map[string]any, oldPaths, newPaths [][]any) bool {
	if !slices.EqualFunc(oldPaths, newPaths, slices.Equal) {
		return false
	}
	for _, p := range newPaths {
		a, okA := valueAt(oldObj, p)
		b, okB := valueAt(newObj, p)
		if okA != okB || !reflect.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

// judgesSomeUpdatesOnly reports whether a policy of the plan declares the
// updates it judges: only then are the changes worth computing first.
func (p *Plan) judgesSomeUpdatesOnly() bool {
	if p.set == nil {
		return false
	}
	for _, i := range p.indices {
		if m := p.set.policies[i].Match; m != nil && len(m.Updates) > 0 {
			return true
		}
	}
	return false
}

// forUpdate is the plan without the policies that do not judge an update with
// these changes.
func (p *Plan) forUpdate(changes map[UpdateChange]bool) *Plan {
	if p.set == nil {
		return p
	}
	kept := make([]int, 0, len(p.indices))
	for _, i := range p.indices {
		if p.set.policies[i].Match.judgesUpdate(changes) {
			kept = append(kept, i)
		}
	}
	if len(kept) == len(p.indices) {
		return p
	}
	q := *p
	q.indices, q.query = kept, nil
	return &q
}
