// Package simwarn is the validating step that tells a batch user, at
// `kubectl apply --dry-run=server` (and, configured, on every create), what
// Kueue would do with their queued workload: one admission warning with the
// simulate verdict, from the informer cache (no API call on the request path).
package simwarn

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/schedsim"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// Prefix starts every simulate warning, so that scripts and people tell it
// from a rule's.
const Prefix = "kueue-guard simulate: "

// DefaultMaxAge is how stale the scheduler view may be: it is rebuilt from
// the cache when the cluster changed and it is older than this. A busy
// cluster's Workloads change all the time; rebuilding on every change would
// make each request pay for listing them all.
const DefaultMaxAge = time.Second

// Step adds the simulate warning to allowed creates of queued workloads.
type Step struct {
	warn   config.SimulationWarn
	maxAge time.Duration

	mu  sync.Mutex
	cur *built
}

// built is a scheduler view at one scheduling generation.
type built struct {
	generation int64
	at         time.Time
	sim        *schedsim.Simulator
	priorities schedsim.Priorities
	err        error
}

var _ guard.ValidationStep = (*Step)(nil)

// NewStep is the step for a configuration (simulation.warn).
func NewStep(cfg *config.Configuration) *Step {
	return &Step{warn: cfg.Simulation.Warn, maxAge: DefaultMaxAge}
}

// Name implements guard.Step.
func (*Step) Name() string { return "simulate" }

// Handles implements guard.Step: creates only.
func (*Step) Handles(op admissionv1.Operation) bool { return op == admissionv1.Create }

// Validate implements guard.ValidationStep. It never denies, and never fails
// a request: what it cannot simulate gets no warning.
func (s *Step) Validate(ctx context.Context, req *guard.Request, t guard.Target, view cluster.View, d *guard.Decision) error {
	switch {
	case s.warn == config.SimulationWarnNever, s.warn == config.SimulationWarnDryRun && !req.DryRun:
		return nil
	case t.Integration == nil, req.Object == nil, !d.Allowed():
		return nil
	case workload.QueueName(req.Object, t.Integration) == "":
		return nil
	}
	b := s.view(ctx, view)
	if b == nil || b.err != nil {
		return nil //nolint:nilerr // a view that cannot be built gets no warning; the request is not failed for it
	}
	res, unit, err := b.sim.SimulateObject(ctx, req.Object, cluster.SummaryOptions(view), b.priorities)
	if err != nil {
		return nil //nolint:nilerr // the guards report an object whose pod sets cannot be computed
	}
	d.Warnings = append(d.Warnings, Prefix+Message(res, unit.Of))
	return nil
}

// view is the scheduler view of the cache, rebuilt when the cluster changed
// and the current one is older than maxAge; nil while the cache cannot tell.
func (s *Step) view(ctx context.Context, view cluster.View) *built {
	gen, known := view.SchedulingGeneration()
	if !known {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.cur; b != nil && (b.generation == gen || time.Since(b.at) < s.maxAge) {
		return b
	}
	b := &built{generation: gen, at: time.Now()}
	state, err := view.SchedulingState()
	if err == nil {
		b.priorities = schedsim.Priorities{Workload: state.WorkloadPriorities, Pod: state.PodPriorities}
		kcfg, _ := view.KueueConfig()
		b.sim, err = schedsim.New(ctx, schedsim.Cluster{KueueObjects: state.KueueObjects, Workloads: state.Workloads,
			Namespace: view.Namespace, Kueue: kcfg})
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "building Kueue's scheduler view for the simulate warning: no warning until it builds")
	}
	b.err = err
	s.cur = b
	return b
}

// Message is a verdict in one line: "would wait: ClusterQueue cq-gpu has 2
// of the 4 nvidia.com/gpu of flavor a100 it needs; 3 workload(s) ahead".
func Message(r *schedsim.Result, of string) string {
	var b strings.Builder
	switch r.Verdict {
	case schedsim.Now:
		fmt.Fprintf(&b, "Kueue would admit it now in ClusterQueue %s", r.ClusterQueue)
		if fl := flavors(r); fl != "" {
			fmt.Fprintf(&b, " (%s)", fl)
		}
		if r.Borrows {
			b.WriteString(", borrowing from its cohort")
		}
		if n := len(r.Preempts); n > 0 {
			fmt.Fprintf(&b, ", preempting %d workload(s)", n)
		}
	case schedsim.Wait:
		fmt.Fprintf(&b, "would wait: ")
		if len(r.Missing) == 0 {
			b.WriteString(r.Message)
		}
		for i, m := range r.Missing {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "ClusterQueue %s has %s of the %s %s of flavor %s it needs", r.ClusterQueue, m.Available, m.Requested, m.Resource, m.Flavor)
		}
		if r.Ahead != nil && r.Ahead.ClusterQueue > 0 {
			fmt.Fprintf(&b, "; %d workload(s) ahead", r.Ahead.ClusterQueue)
		}
	case schedsim.Never:
		fmt.Fprintf(&b, "Kueue would never admit it: %s", strings.TrimPrefix(r.Reason+": "+r.Message, ": "))
	}
	if of != "" {
		fmt.Fprintf(&b, " (Kueue admits it %s at a time)", of)
	}
	return b.String()
}

// flavors renders "main: cpu → default, nvidia.com/gpu → a100".
func flavors(r *schedsim.Result) string {
	var sets []string
	for _, ps := range r.PodSets {
		var fl []string
		for _, res := range slices.Sorted(maps.Keys(ps.Flavors)) {
			fl = append(fl, res+" → "+ps.Flavors[res])
		}
		sets = append(sets, ps.Name+": "+strings.Join(fl, ", "))
	}
	return strings.Join(sets, "; ")
}
