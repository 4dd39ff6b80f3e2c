package policies

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/topdown"
)

// Reasons an evaluation failed, as the "reason" label of the engine error counter.
// They separate a broken policy (evaluation) from an overloaded or slow server
// (deadline, no_slot), which call for different fixes.
const (
	reasonEvaluation = "evaluation"
	reasonDeadline   = "deadline"
	reasonNoSlot     = "no_slot"
	reasonCancelled  = "cancelled"
	reasonNotLoaded  = "not_loaded"
	reasonInput      = "input"
)

// Failure is a policy, or the whole set, that could not be evaluated for a request.
type Failure struct {
	// Policy is the failing policy, or nil when the set as a whole could not be
	// evaluated (deadline, no slot, nothing loaded, unreadable workload).
	Policy *Policy
	// Reason is short and safe to show a user: no stack, no input values.
	Reason string
	// Code is the metric reason (evaluation, deadline, no_slot, ...).
	Code string
	// Err is the underlying error, for logs.
	Err error
}

// PolicyID is the failing policy's id, or "" for the whole set.
func (f Failure) PolicyID() string {
	if f.Policy == nil {
		return ""
	}
	return f.Policy.ID
}

// contextFailure explains why the context ended. The request's own deadline may
// be shorter than the engine's timeout, so the time actually spent is reported.
func (e *Engine) contextFailure(ctx context.Context, start time.Time, waiting bool) Failure {
	err := ctx.Err()
	spent := time.Since(start).Round(time.Millisecond)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && waiting:
		return Failure{Reason: fmt.Sprintf("no evaluation slot became free within %s (%d evaluations already running)",
			spent, e.slots.size), Code: reasonNoSlot, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return Failure{Reason: fmt.Sprintf("evaluation did not finish within %s (deadline %s)", spent, e.opts.Timeout),
			Code: reasonDeadline, Err: err}
	}
	return Failure{Reason: "the request was cancelled during evaluation", Code: reasonCancelled, Err: err}
}

// evalReason is an evaluation error in one line: OPA's code and message, and the
// policy file and line, without OPA's stack.
func evalReason(err error) string {
	if te, ok := errors.AsType[*topdown.Error](err); ok {
		msg := te.Code + ": " + te.Message
		if te.Location != nil {
			msg += fmt.Sprintf(" (%s:%d)", filepath.Base(te.Location.File), te.Location.Row)
		}
		return shorten(msg)
	}
	return shorten(err.Error())
}

// maxReason keeps failure reasons to one readable line.
const maxReason = 200

func shorten(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncate(s, maxReason)
}

// truncate cuts s to at most n bytes, ending in "...", without splitting a
// UTF-8 character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
