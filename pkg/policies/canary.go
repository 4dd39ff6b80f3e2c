package policies

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// canarySize is how many recent inputs a new policy set is tried on before it
// is swapped in, and canaryMaxObject the largest object (its JSON, in bytes)
// kept among them: an input costs several times its object, and a few large
// ones would otherwise pin hundreds of megabytes. Real Jobs and JobSets are a
// few kilobytes.
const (
	canarySize      = 64
	canaryMaxObject = 32 << 10
)

// canaryInput is one input the serving set evaluated without a failure, and
// the request it came from (what chooses the policies that apply to it).
type canaryInput struct {
	sub   Subject
	input ast.Value
	// build makes the input when it was not kept (nil input).
	build func() (ast.Value, error)
}

// canaryEvery is the least time between two requests the ring keeps: it turns
// over at most once a second, so that a quiet server keeps every request and
// a busy one a sample of its last seconds, each kept at a cost (its objects
// encoded, see keptRequest) that a thousand requests a second do not pay.
var canaryEvery = time.Second / canarySize

// canaryRing holds the most recent inputs the serving set judged cleanly. It is
// written on evaluated requests without a lock: each write replaces one slot.
// Inputs are immutable once built, so holding them is safe.
type canaryRing struct {
	slots [canarySize]atomic.Pointer[canaryInput]
	next  atomic.Uint64
	// last is when the last request was kept (UnixNano).
	last atomic.Int64
}

func (r *canaryRing) record(sub *Subject, input ast.Value) {
	if input != nil && r.due(sub) {
		r.keep(sub, &canaryInput{input: input})
	}
}

// recordBuilder keeps a request whose input is built only if a new set is
// tried; kept is called only when the ring takes it, and returns what builds
// the input again (nil: nothing to keep).
func (r *canaryRing) recordBuilder(sub *Subject, kept func() func() (ast.Value, error)) {
	if !r.due(sub) {
		return
	}
	if build := kept(); build != nil {
		r.keep(sub, &canaryInput{build: build})
	}
}

// due reports whether the ring takes the request: an object of a size it
// keeps, canaryEvery after the last one it took.
func (r *canaryRing) due(sub *Subject) bool {
	if sub == nil || sub.Size <= 0 || sub.Size > canaryMaxObject {
		return false
	}
	now, last := time.Now().UnixNano(), r.last.Load()
	return now-last >= int64(canaryEvery) && r.last.CompareAndSwap(last, now)
}

func (r *canaryRing) keep(sub *Subject, c *canaryInput) {
	// No copies of the label maps: the object's are GetLabels' own copy, the
	// namespace's belong to the informer cache, which nothing mutates.
	c.sub = *sub
	r.slots[(r.next.Add(1)-1)%canarySize].Store(c)
}

func (r *canaryRing) inputs() []*canaryInput {
	var out []*canaryInput
	for i := range r.slots {
		if c := r.slots[i].Load(); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// canary evaluates a new set on the recent inputs the serving set judged
// without a failure, and on the sample workloads (canary_samples.yaml, one of
// every kind) that the serving set judges without one, or every sample when
// no set serves yet. A set that fails to evaluate one of them (a runtime
// error: conflicting outputs, a type error on real data) is refused, naming
// the policy's file and line: swapped in, it would fail every such request,
// which policies.onError (deny by default) turns into denials of workloads
// the serving set admits, Kueue's own updates included. Deadlines do not
// count: under load they say more about the machine than about the set.
func (e *Engine) canary(ctx context.Context, set *policySet) error {
	for _, c := range e.recent.inputs() {
		if f := e.evaluationFailure(ctx, set, c); f != nil {
			return e.canaryProblem(c, "a recent", f)
		}
	}
	samples, err := canarySamples()
	if err != nil {
		return err // the embedded samples are tested: not the admin's set
	}
	serving := e.set.Load()
	for _, c := range samples {
		f := e.evaluationFailure(ctx, set, c)
		if f == nil {
			continue
		}
		if serving != nil && e.evaluationFailure(ctx, serving, c) != nil {
			continue // the serving set fails on it too: not a regression
		}
		return e.canaryProblem(c, "the sample", f)
	}
	return nil
}

// evaluationFailure is set's evaluation error on c, if it has one.
func (e *Engine) evaluationFailure(ctx context.Context, set *policySet, c *canaryInput) *Failure {
	p := e.planFor(set, &c.sub)
	if p.Empty() {
		return nil
	}
	input := c.input
	if input == nil {
		var err error
		if input, err = c.build(); err != nil {
			return nil // the serving set could not read it either
		}
	}
	res := p.evaluate(ctx, input)
	for i := range res.Failures {
		if res.Failures[i].Code == reasonEvaluation {
			return &res.Failures[i]
		}
	}
	return nil
}

// canaryProblem is the refusal of a set that failed on c, with the policy's
// file and line.
func (e *Engine) canaryProblem(c *canaryInput, which string, f *Failure) error {
	prob := Problem{Message: fmt.Sprintf(
		"fails at evaluation on %s %s %s request in namespace %q, which the serving set judges without error: %s",
		which, c.sub.Kind.Kind, c.sub.Operation, c.sub.Namespace, f.Reason)}
	var te *topdown.Error
	if errors.As(f.Err, &te) && te.Location != nil {
		prob.File, prob.Line = filepath.Join(e.opts.Directory, te.Location.File), te.Location.Row
	} else if f.Policy != nil && len(f.Policy.Files) > 0 {
		prob.File = filepath.Join(e.opts.Directory, f.Policy.Files[0])
	}
	if f.Policy != nil {
		prob.Message = f.Policy.ID + " " + prob.Message
	}
	return &LoadError{Dir: e.opts.Directory, Problems: []Problem{prob}}
}
