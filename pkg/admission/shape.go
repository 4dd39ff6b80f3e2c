package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
)

// The most an object may hold for kueue-guard to judge it. Real workloads are
// far inside: a JobSet is about 12 levels deep, an AppWrapper wrapping one about
// 20, and the largest object etcd stores (1.5 MiB) has some 100,000 values. An
// object beyond them is built to make every walk of it (summaries, policies)
// expensive.
const (
	MaxObjectDepth  = 100
	MaxObjectValues = 250_000
)

const objectShapeName = "object-shape"

// RuleObjectTooComplex refuses an absurdly nested or large object before any
// other step walks it.
var RuleObjectTooComplex = Register(Rule{
	ID:    RuleNamespace + ".object_too_complex",
	Title: "Object of a workload's shape",
	Doc: fmt.Sprintf("An object nested more than %d levels deep, or holding more than %d values (maps, lists and scalars), "+
		"is denied before anything walks it: no workload comes near, and judging one would cost every other request its share of the server.",
		MaxObjectDepth, MaxObjectValues),
	Enforcement: EnforcementDeny,
	Check:       objectShapeName,
	WebhookOnly: "it walks the whole object; the API server bounds CEL's cost itself",
})

// ObjectShape denies an object beyond MaxObjectDepth or MaxObjectValues. It runs
// first, and the policy step evaluates nothing after a built-in denial, so such
// an object costs one bounded walk.
type ObjectShape struct{}

var _ ValidationStep = ObjectShape{}

// Name implements Step.
func (ObjectShape) Name() string { return objectShapeName }

// Handles implements Step.
func (ObjectShape) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep.
func (ObjectShape) Validate(_ context.Context, req *Request, t Target, _ cluster.View, d *Decision) error {
	if req.Object == nil {
		return nil
	}
	depth, values, ok := measure(req.Object.Object, MaxObjectDepth, MaxObjectValues)
	// What the webhook left undecoded counts as if it were there: its
	// managedFields, at ManagedFieldsPath under the root.
	if u := req.undecodedOf(req.Object); ok && u.JSON != nil {
		depth, values = max(depth, len(ManagedFieldsPath)+u.Depth), values+u.Values
		ok = depth <= MaxObjectDepth && values <= MaxObjectValues
	}
	if ok {
		return nil
	}
	what := fmt.Sprintf("holds more than %d values", MaxObjectValues)
	if depth > MaxObjectDepth {
		what = fmt.Sprintf("is nested more than %d levels deep", MaxObjectDepth)
	}
	d.Deny(RuleObjectTooComplex, nil, fmt.Sprintf("%s %q %s (read %d values): no workload is; simplify it",
		t.Integration.GVK.Kind, req.Name, what, values))
	return nil
}

// measure walks v depth-first, without recursion, and stops as soon as it is
// deeper than maxDepth or holds more than maxValues values; ok says it is
// within both. depth is the deepest level seen, values the values counted
// (children are counted when they are pushed, so one wide map cannot grow the
// stack past the bound, and the stack holds one path's siblings, not a level).
func measure(v any, maxDepth, maxValues int) (depth, values int, ok bool) {
	type node struct {
		v     any
		depth int
	}
	// A Job's walk keeps a few dozen nodes at most: on the goroutine's stack,
	// the walk allocates nothing (4 allocations, 650 bytes a request before).
	var buf [64]node
	stack := append(buf[:0], node{v, 1})
	values = 1
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		depth = max(depth, n.depth)
		if depth > maxDepth {
			return depth, values, false
		}
		switch c := n.v.(type) {
		case map[string]any:
			if values += len(c); values > maxValues {
				return depth, values, false
			}
			for _, e := range c {
				stack = append(stack, node{e, n.depth + 1})
			}
		case []any:
			if values += len(c); values > maxValues {
				return depth, values, false
			}
			for _, e := range c {
				stack = append(stack, node{e, n.depth + 1})
			}
		}
	}
	return depth, values, true
}
