package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// point is one closed-loop measurement: an endpoint sent one body by c workers.
type point struct {
	ep   *endpoint
	body *body
	c    int
}

// openPoint is one open-loop measurement: an endpoint sent one body at a fraction
// of the rate it reached in the closed loop at the matrix concurrency.
type openPoint struct {
	ep       *endpoint
	body     *body
	fraction float64
}

// headline is a row measured at every concurrency: Job CREATE through the floor,
// mutated with a patch to make and with nothing to do, validated by the shipped
// policies, and evaluated by OPA.
type headline struct{ endpoint, body string }

var headlines = []headline{
	{epFloor, "Job CREATE"},
	{epMutate, "Job CREATE"},
	{epMutate, "Job CREATE +queue"},
	{epValidate, "Job CREATE +queue"},
	{epOPA, "Job CREATE +queue"},
}

// plan is every measurement of a run, in the order they are made.
type plan struct {
	closed []point
	open   []openPoint
}

// makePlan measures every endpoint with every body it takes at the matrix
// concurrency (the floor with the unqueued bodies, OPA with the queued ones), and
// the headline rows at the other concurrencies and in the open loop. The matrix
// concurrency is measured first: without --open-capacity, the open loop's rates
// derive from it.
func makePlan(o *options, eps []*endpoint, bodies []*body) plan {
	var p plan
	levels := []int{o.matrixConcurrency}
	for _, c := range o.concurrency {
		if !slices.Contains(levels, c) {
			levels = append(levels, c)
		}
	}
	for _, c := range levels {
		for _, ep := range eps {
			for _, b := range bodies {
				if takes(ep, b) && (c == o.matrixConcurrency || isHeadline(ep, b)) {
					p.closed = append(p.closed, point{ep: ep, body: b, c: c})
				}
			}
		}
	}
	for _, ep := range eps {
		for _, b := range bodies {
			if !isHeadline(ep, b) {
				continue
			}
			for _, f := range o.openFractions {
				p.open = append(p.open, openPoint{ep: ep, body: b, fraction: f})
			}
		}
	}
	return p
}

// measurementOrder is the order of the plan's closed-loop points as they are
// measured: each floor point, then at once every point compared with it (same
// kind, operation and concurrency), the groups in the plan's order. The machine
// is shared, and what else runs on it drifts over minutes: a ratio to a floor
// measured a quarter of an hour earlier carried that drift. The report keeps
// the plan's order.
func measurementOrder(points []point) []int {
	return groupedOrder(points, func(pt point) string { return strconv.Itoa(pt.c) + "/" + pt.body.floorName() })
}

// openMeasurementOrder is measurementOrder for the open-loop points: each
// share of capacity in turn, the floor's point first.
func openMeasurementOrder(points []openPoint) []int {
	return groupedOrder(points, func(op openPoint) string {
		return strconv.FormatFloat(op.fraction, 'g', -1, 64) + "/" + op.body.floorName()
	})
}

// groupedOrder is the order of points with each group's in a row, groups and
// the points of each in their order in points.
func groupedOrder[P any](points []P, group func(P) string) []int {
	first := map[string]int{}
	order := make([]int, len(points))
	for i, pt := range points {
		order[i] = i
		if _, ok := first[group(pt)]; !ok {
			first[group(pt)] = i
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(first[group(points[a])], first[group(points[b])])
	})
	return order
}

// takes reports whether an endpoint is measured with a body: the floor reads no
// label, so it is measured once per kind and operation; OPA only evaluates
// policies, which kueue-guard runs for queued workloads only. Check-only bodies
// are measured by none. A stream is measured against the floor, the validating
// webhook and OPA: its workloads are queued, so the mutating webhook would have
// nothing to do.
func takes(ep *endpoint, b *body) bool {
	if b.CheckOnly {
		return false
	}
	if b.Stream != nil {
		return ep.Name != epMutate
	}
	switch ep.Name {
	case epFloor:
		return !b.Queued
	case epOPA:
		return b.Queued
	}
	return true
}

// probes reports whether an endpoint is sent a body before the load: those it is
// measured with, and the check-only bodies for the validating webhook and OPA.
// Streams are sent by the decision check instead (decisions.go).
func probes(ep *endpoint, b *body) bool {
	if b.Stream != nil {
		return false
	}
	if b.CheckOnly {
		return ep.Name == epValidate || ep.Name == epOPA
	}
	return takes(ep, b)
}

func isHeadline(ep *endpoint, b *body) bool {
	return slices.Contains(headlines, headline{ep.Name, b.Name})
}

// Fixed costs of a run besides the load, for the estimate printed at start.
const (
	startupEstimate = 45 * time.Second
	scaleEstimate   = 2 * time.Minute
	// streamRequestEstimate is the building, reference evaluation and
	// decision check of one request of each of the four streams, on two
	// cores.
	streamRequestEstimate = 30 * time.Millisecond
)

// estimate is how long the run should take: the load points, the package
// benchmarks, the start-up, the streams' building and check, and the scale
// figure.
func (p plan) estimate(o *options) time.Duration {
	closed := time.Duration(len(p.closed)) * (o.warmup + time.Duration(o.reps)*o.duration)
	open := time.Duration(len(p.open)) * (2*o.warmup + o.openCapacity + o.duration + 100*time.Millisecond)
	d := closed + open + startupEstimate + time.Duration(o.streamSize)*streamRequestEstimate
	if o.goBench != "" {
		d += o.goBenchEstimate()
	}
	if o.scale {
		d += scaleEstimate
	}
	return d
}

// describe is the plan in two lines.
func (p plan) describe(o *options) string {
	return fmt.Sprintf(
		"%d closed-loop points (%d × %v after a %v warm-up each, concurrency %v; all bodies, and streams of %d requests, at %d) and %d open-loop points (%v each after a warm-up)\nestimated run time: %v (deadline %v)",
		len(p.closed),
		o.reps,
		o.duration,
		o.warmup,
		joinInts(o.concurrency),
		o.streamSize,
		o.matrixConcurrency,
		len(p.open),
		o.duration,
		p.estimate(o).Round(time.Second),
		o.timeout,
	)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
