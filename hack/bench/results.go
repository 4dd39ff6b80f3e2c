package main

import (
	"fmt"
	"time"

	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// results is everything a run measured; the report is rendered from it.
type results struct {
	Machine  machine
	Policies []*policies.Policy
	Bodies   []bodyRow
	Closed   []closedResult
	Open     []openResult
	Memory   []serverMemory
	// Scale is nil without --scale, Audit without --audit-workloads.
	Scale            *scaleResult
	Audit            *auditResult
	GoBenchmarks     []goBenchmark
	GoBenchmarkError string
	// Mismatches are bodies on which OPA and kueue-guard disagreed.
	Mismatches []string
	// Streams describe the distinct-workload streams; Decisions is the
	// decision check of the queued bodies and every stream request.
	Streams   []streamRow
	Decisions decisionCheck
	Elapsed   time.Duration
}

// streamRow describes one stream: what it is made of, and what the policies
// decide on its requests (the reference's answers).
type streamRow struct {
	Name                          string
	Requests, Shapes, Repeated    int
	Grows                         int
	ReviewMin, ReviewMax          int
	ReviewMean, InputMean         float64
	Allowed, Denied, WithWarnings int
}

// summarizeStream describes a stream body.
func summarizeStream(b *body) streamRow {
	s := b.Stream
	row := streamRow{Name: b.Name, Requests: len(s.Reviews), Shapes: s.Shapes, Repeated: s.Repeated, Grows: s.Grows,
		ReviewMin: len(s.Reviews[0])}
	for i, review := range s.Reviews {
		row.ReviewMin, row.ReviewMax = min(row.ReviewMin, len(review)), max(row.ReviewMax, len(review))
		row.ReviewMean += float64(len(review)) / float64(row.Requests)
		row.InputMean += float64(len(s.Inputs[i])) / float64(row.Requests)
		if s.Want[i].Allowed {
			row.Allowed++
		} else {
			row.Denied++
		}
		if len(s.Want[i].Warnings) > 0 {
			row.WithWarnings++
		}
	}
	return row
}

// bodyRow describes one body and what kueue-guard answered it.
type bodyRow struct {
	Name                    string
	ReviewBytes, InputBytes int
	// Mutate and Validate summarize kueue-guard's answers; Findings are the
	// policies' findings on the validating path (queued bodies only).
	Mutate, Validate, Findings string
}

// closedResult is one closed-loop point's figures.
type closedResult struct {
	point
	// RPS is the mean of the repetitions' throughputs, RepRPS each one's.
	RPS     float64
	RepRPS  []float64
	Latency latency
	// Requests and Errors are over all repetitions.
	Requests, Errors int
	FirstError       string
	// CPUPerRequest is the server's CPU time over the repetitions divided by
	// the requests completed.
	CPUPerRequest time.Duration
	// Decisions are kueue-guard's policy evaluations over the
	// repetitions: answered by its decision cache, or evaluated.
	Decisions decisions
}

// decisions counts a point's policy decisions by how they were made.
type decisions struct{ Hits, Misses int }

func (d decisions) minus(o decisions) decisions {
	return decisions{Hits: d.Hits - o.Hits, Misses: d.Misses - o.Misses}
}

// reusedCell is the share of decisions the cache answered, or "–".
func (d decisions) reusedCell() string {
	if d.Hits+d.Misses <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(d.Hits)/float64(d.Hits+d.Misses))
}

// openResult is one open-loop point's figures.
type openResult struct {
	openPoint
	// Capacity is the target's closed-loop rate just before the point, Rate
	// the rate asked (its fraction of Capacity), Achieved what was sent and
	// answered.
	Capacity, Rate, Achieved float64
	Latency                  latency
	// Queued requests were sent after their scheduled time because every
	// worker was busy: the server was behind.
	Requests, Errors, Queued int
	FirstError               string
	// GC is what kueue-guard's garbage collector did during the point (nil
	// for a server without metrics).
	GC *gcDelta
}

// gcDelta is a Go server's collector over a point: cycles begun and the CPU
// they took (the runtime's own estimate).
type gcDelta struct {
	Cycles int
	CPU    time.Duration
	// Tail is how the point's slowest requests fell beside the cycles (nil
	// without a trace of them).
	Tail *tailInGC
}

// serverMemory is a server's resident set idle and its peak after the load.
type serverMemory struct {
	Name       string
	Idle, Peak memory
}

// closed finds a closed-loop result.
func (r *results) closed(endpoint, body string, c int) *closedResult {
	for i := range r.Closed {
		x := &r.Closed[i]
		if x.ep.Name == endpoint && x.body.Name == body && x.c == c {
			return x
		}
	}
	return nil
}

// floorOf is the floor's result that a result is compared with: same kind,
// operation and concurrency.
func (r *results) floorOf(x *closedResult) *closedResult {
	return r.closed(epFloor, x.body.floorName(), x.c)
}

// floorOpen is the floor's open-loop result at the same load fraction.
func (r *results) floorOpen(x *openResult) *openResult {
	for i := range r.Open {
		f := &r.Open[i]
		if f.ep.Name == epFloor && f.body.Name == x.body.floorName() && f.fraction == x.fraction {
			return f
		}
	}
	return nil
}

// goBenchmark finds a package benchmark by name.
func (r *results) goBenchmark(name string) *goBenchmark {
	for i := range r.GoBenchmarks {
		if r.GoBenchmarks[i].Name == name {
			return &r.GoBenchmarks[i]
		}
	}
	return nil
}
