package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// probe sends every endpoint each body it is measured with once: each must
// answer, what kueue-guard answers is recorded for the bodies table, OPA's
// findings are compared with kueue-guard's for every queued body (a mismatch is
// printed loudly and reported, but the run goes on), and kueue-guard's answers
// to the queued bodies and to every stream request go through the decision
// check, which fails the run before the load on any mismatch.
func (b *bench) probe(ctx context.Context) error {
	client := newClient(1)
	defer client.CloseIdleConnections()
	for _, body := range b.bodies {
		if body.Stream != nil {
			continue
		}
		row, err := b.probeBody(ctx, client, body)
		if err != nil {
			return err
		}
		b.results.Bodies = append(b.results.Bodies, row)
	}
	if err := b.checkStreams(ctx); err != nil {
		return err
	}
	return b.results.Decisions.failed()
}

// probeBody sends one body to the endpoints that take it.
func (b *bench) probeBody(ctx context.Context, client *http.Client, body *body) (bodyRow, error) {
	row := bodyRow{Name: body.Name, ReviewBytes: len(body.Review), InputBytes: len(body.Input)}
	var guard policyAnswer
	var opaFindings map[string]int
	for _, ep := range b.eps {
		if !probes(ep, body) {
			continue
		}
		c := &caller{client: client, url: ep.url(), payload: ep.payload(body), check: ep.check}
		if err := c.call(ctx); err != nil {
			return row, fmt.Errorf("%s does not answer %s: %w", ep.Label, body.Name, err)
		}
		var err error
		switch ep.Name {
		case epMutate:
			row.Mutate, _, err = admissionAnswer(c.buf.Bytes(), b.policyIDs)
		case epValidate:
			row.Validate, guard, err = admissionAnswer(c.buf.Bytes(), b.policyIDs)
		case epOPA:
			opaFindings, err = opaAnswer(c.buf.Bytes(), b.policyIDs)
		}
		if err != nil {
			return row, fmt.Errorf("%s, %s: %w", ep.Label, body.Name, err)
		}
	}
	if body.Queued {
		row.Findings = describeFindings(guard.counts(b.policyIDs))
		b.compareFindings(body, guard.counts(b.policyIDs), opaFindings)
		b.results.Decisions.record(body.Name, guard, body.want)
	}
	return row, nil
}

// compareFindings records a mismatch between kueue-guard's and OPA's findings.
func (b *bench) compareFindings(body *body, guard, opa map[string]int) {
	if d := countsDiff(b.policyIDs, guard, opa); d != "" {
		m := body.Name + ": " + d
		fmt.Println("!!! MISMATCH !!!", m)
		b.results.Mismatches = append(b.results.Mismatches, m)
	}
}

// describeFindings renders findings per policy: "fits_cluster_queue 1", or "none".
func describeFindings(f map[string]int) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(f)) {
		if f[id] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(id, "kueue_guard."), f[id]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// measure runs the plan's closed-loop points, then its open-loop points, and
// reads every server's peak memory.
func (b *bench) measure(ctx context.Context, p plan) error {
	if err := b.measureAllClosed(ctx, p.closed); err != nil {
		return err
	}
	if err := b.measureAllOpen(ctx, p.open); err != nil {
		return err
	}
	for _, s := range b.servers {
		m, err := readMemory(s.proc.pid())
		if err != nil {
			return err
		}
		s.Peak = m
		b.results.Memory = append(b.results.Memory, serverMemory{Name: s.Name, Idle: s.Idle, Peak: s.Peak})
	}
	return nil
}

// measureAllClosed measures the closed-loop points in measurementOrder and
// keeps their results in the plan's order.
func (b *bench) measureAllClosed(ctx context.Context, points []point) error {
	measured := make([]closedResult, len(points))
	for n, i := range measurementOrder(points) {
		pt := points[i]
		r, err := b.measureClosed(ctx, pt)
		if err != nil {
			return err
		}
		measured[i] = r
		fmt.Printf("[%2d/%d] %-36s %-20s C=%-3d %8.0f rps  p50 %-8v p99 %-8v cpu/req %-8v errors %d\n", n+1, len(points),
			pt.ep.Label, pt.body.Name, pt.c, r.RPS, ms(r.Latency.P50), ms(r.Latency.P99), r.CPUPerRequest.Round(time.Microsecond), r.Errors)
	}
	b.results.Closed = measured
	return nil
}

// measureAllOpen measures the open-loop points in openMeasurementOrder, each at
// its share of its target's capacity, and keeps their results in the plan's
// order (a target without a closed-loop rate has none).
func (b *bench) measureAllOpen(ctx context.Context, points []openPoint) error {
	measured := make([]*openResult, len(points))
	for n, i := range openMeasurementOrder(points) {
		op := points[i]
		closed := b.results.closed(op.ep.Name, op.body.Name, b.o.matrixConcurrency)
		if closed == nil || closed.RPS <= 0 {
			continue
		}
		capacity, err := b.capacity(ctx, op, closed.RPS)
		if err != nil {
			return err
		}
		r, err := b.measureOpen(ctx, op, op.fraction*capacity)
		if err != nil {
			return err
		}
		r.Capacity = capacity
		measured[i] = &r
		fmt.Printf("[%2d/%d] %-36s %-20s %3.0f%% of %6.0f/s = %6.0f/s  achieved %6.0f/s  p50 %-8v p99 %-8v max %-8v GC %s tail in GC %s errors %d\n", n+1, len(points),
			op.ep.Label, op.body.Name, 100*op.fraction, capacity, r.Rate, r.Achieved, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), gcCell(r.GC), gcTailCell(r.GC), r.Errors)
	}
	for _, r := range measured {
		if r != nil {
			b.results.Open = append(b.results.Open, *r)
		}
	}
	return nil
}

// capacity is the rate op's target answers its body (errors aside) at the matrix concurrency
// now, in a closed loop of --open-capacity (without one, matrixRPS, the
// closed-loop point's). An open-loop point minutes after the closed loop would
// otherwise be a share of what the shared machine gave then: a drop in between
// queues requests that no stall of the server delayed.
func (b *bench) capacity(ctx context.Context, op openPoint, matrixRPS float64) (float64, error) {
	if b.o.openCapacity <= 0 {
		return matrixRPS, nil
	}
	c := b.o.matrixConcurrency
	newCaller, done := callers(op.ep, op.body, c)
	defer done()
	if b.o.warmup > 0 {
		closedLoop(ctx, newCaller, c, b.o.warmup)
	}
	var r loopRun
	withHarnessGCHeld(func() { r = closedLoop(ctx, newCaller, c, b.o.openCapacity) })
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	answered := r.requests() - r.errors
	if answered <= 0 || r.elapsed <= 0 {
		return 0, fmt.Errorf("%s answered no %s in %v before its open-loop point: %v", op.ep.Label, op.body.Name, b.o.openCapacity, r.firstError)
	}
	return float64(answered) / r.elapsed.Seconds(), nil
}

// callers makes one caller per worker for a point, all on one client; for a
// stream, all on one cursor, so that the workers send its requests in turn.
func callers(ep *endpoint, b *body, conns int) (newCaller func() *caller, done func()) {
	client := newClient(conns)
	url, payload, stream, marks := ep.url(), ep.payload(b), ep.stream(b), ep.marks(b)
	cursor := new(atomic.Uint64)
	return func() *caller {
		return &caller{client: client, url: url, payload: payload, check: ep.check, stream: stream, cursor: cursor, marks: marks}
	}, client.CloseIdleConnections
}

// measureClosed measures one closed-loop point: a warm-up, then the repetitions,
// with the server's CPU time read around them.
func (b *bench) measureClosed(ctx context.Context, pt point) (closedResult, error) {
	newCaller, done := callers(pt.ep, pt.body, pt.c)
	defer done()
	if b.o.warmup > 0 {
		closedLoop(ctx, newCaller, pt.c, b.o.warmup)
	}
	pid := pt.ep.srv.proc.pid()
	before, err := cpuTime(pid)
	if err != nil {
		return closedResult{}, err
	}
	decisionsBefore, err := decisionCounts(ctx, pt.ep.srv)
	if err != nil {
		return closedResult{}, err
	}
	var all loopRun
	var rps []float64
	for range b.o.reps {
		var r loopRun
		withHarnessGCHeld(func() { r = closedLoop(ctx, newCaller, pt.c, b.o.duration) })
		rps = append(rps, float64(r.requests())/r.elapsed.Seconds())
		all.add(r)
	}
	after, err := cpuTime(pid)
	if err != nil {
		return closedResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return closedResult{}, err
	}
	if err := b.alive(); err != nil {
		return closedResult{}, err
	}
	r := closedResult{point: pt, RepRPS: rps, Latency: summarize(all.latencies), Requests: all.requests(), Errors: all.errors}
	r.RPS = mean(rps)
	if all.firstError != nil {
		r.FirstError = all.firstError.Error()
	}
	if r.Requests > 0 {
		r.CPUPerRequest = (after - before) / time.Duration(r.Requests)
	}
	decisionsAfter, err := decisionCounts(ctx, pt.ep.srv)
	if err != nil {
		return closedResult{}, err
	}
	r.Decisions = decisionsAfter.minus(decisionsBefore)
	return r, nil
}

// decisionCounts reads kueue-guard's decision cache counters (zero for
// the other servers, which have none).
func decisionCounts(ctx context.Context, s *server) (decisions, error) {
	if s.metrics == "" {
		return decisions{}, nil
	}
	v, err := readMetrics(ctx, s.metrics, decisionHit, decisionMiss)
	if err != nil {
		return decisions{}, err
	}
	return decisions{Hits: int(v[decisionHit]), Misses: int(v[decisionMiss])}, nil
}

// gcCounters are a Go server's collector counters as its metrics read.
type gcCounters struct {
	cycles, cpuSeconds float64
	// lastGC is when cycle lastN ended, in Unix seconds: both from one read
	// of the runtime's GC statistics (debug.ReadGCStats), which cycles is not.
	lastGC, lastN float64
}

// The Go runtime's own metrics, which controller-runtime's registry exports.
const (
	gcCycles = "go_gc_cycles_total_gc_cycles_total"
	gcCPU    = "go_cpu_classes_gc_total_cpu_seconds_total"
	gcLast   = "go_memstats_last_gc_time_seconds"
	gcLastN  = "go_gc_duration_seconds_count"
)

// readGC reads kueue-guard's collector counters (nil for the other servers,
// which export none), so that an open-loop point's tail can be set beside
// the cycles that ran in it.
func readGC(ctx context.Context, s *server) (*gcCounters, error) {
	if s.metrics == "" {
		return nil, nil
	}
	v, err := readMetrics(ctx, s.metrics, gcCycles, gcCPU, gcLast, gcLastN)
	if err != nil {
		return nil, err
	}
	return &gcCounters{cycles: v[gcCycles], cpuSeconds: v[gcCPU], lastGC: v[gcLast], lastN: v[gcLastN]}, nil
}

// minus is what the collector did since before (nil unless both were read).
func (c *gcCounters) minus(before *gcCounters) *gcDelta {
	if c == nil || before == nil {
		return nil
	}
	return &gcDelta{Cycles: int(c.cycles - before.cycles),
		CPU: time.Duration((c.cpuSeconds - before.cpuSeconds) * float64(time.Second)).Round(time.Microsecond)}
}

// tailInCycles sets a point's p99 tail beside the cycles of p's collector that
// ran during it (nil without a trace of them, or when the last cycle's line
// did not arrive to set them in the harness's clock).
func tailInCycles(p *process, after *gcCounters, r openRun, p99 time.Duration) *tailInGC {
	if p == nil || p.gc == nil || after == nil || after.lastGC <= 0 ||
		!p.gc.calibrateWithin(int(after.lastN), time.Unix(0, int64(after.lastGC*1e9)), time.Second) {
		return nil
	}
	from, to := requestSpan(r.sent, r.latencies)
	tail := tailOverlap(r.sent, r.latencies, p99, p.gc.between(from, to))
	return &tail
}

const (
	decisionHit  = `kueue_guard_policy_decision_cache_total{result="hit"}`
	decisionMiss = `kueue_guard_policy_decision_cache_total{result="miss"}`
)

// measureOpen measures one open-loop point at rate requests per second, after a
// warm-up at that rate.
func (b *bench) measureOpen(ctx context.Context, op openPoint, rate float64) (openResult, error) {
	newCaller, done := callers(op.ep, op.body, b.o.openWorkers)
	defer done()
	if b.o.warmup > 0 {
		// At the same rate, unmeasured: the workers' first requests open
		// their connections (TLS handshakes) here.
		openLoop(ctx, newCaller, rate, b.o.warmup, b.o.openWorkers)
	}
	gcBefore, err := readGC(ctx, op.ep.srv)
	if err != nil {
		return openResult{}, err
	}
	var r openRun
	withHarnessGCHeld(func() { r = openLoop(ctx, newCaller, rate, b.o.duration, b.o.openWorkers) })
	if err := ctx.Err(); err != nil {
		return openResult{}, err
	}
	gcAfter, err := readGC(ctx, op.ep.srv)
	if err != nil {
		return openResult{}, err
	}
	if err := b.alive(); err != nil {
		return openResult{}, err
	}
	res := openResult{openPoint: op, Rate: rate, Latency: summarize(r.latencies), Requests: r.requests(),
		Errors: r.errors, Queued: r.queued, GC: gcAfter.minus(gcBefore)}
	if res.GC != nil {
		res.GC.Tail = tailInCycles(op.ep.srv.proc, gcAfter, r, res.Latency.P99)
	}
	if r.elapsed > 0 {
		res.Achieved = float64(r.requests()) / r.elapsed.Seconds()
	}
	if r.firstError != nil {
		res.FirstError = r.firstError.Error()
	}
	return res, nil
}

// measureScale creates the scale objects, restarts kueue-guard so that its
// memory is that of a server which listed them at start (not one still holding
// the load's garbage), waits until it knows the last LocalQueue, and samples its
// resident set.
func (b *bench) measureScale(ctx context.Context) error {
	want := b.o.scaleCounts
	fmt.Printf("scale: creating %d Namespaces, %d LocalQueues, %d ClusterQueues and %d Deployments …\n",
		want.Namespaces, want.LocalQueues, want.ClusterQueues, want.Deployments)
	start := time.Now()
	counts, err := createScaleObjects(ctx, b.env.Config, want)
	res := &scaleResult{Counts: counts, Create: time.Since(start)}
	b.results.Scale = res
	if err != nil {
		return fmt.Errorf("created %+v: %w", counts, err)
	}
	fmt.Printf("scale: created in %v; restarting kueue-guard …\n", res.Create.Round(time.Second))
	guard := b.endpoint(epMutate).srv
	guard.proc.stop()
	start = time.Now()
	fresh, err := startGuard(ctx, b.guard, filepath.Join(b.workDir, "kueue-guard-scale.log"))
	if err != nil {
		return err
	}
	*guard = *fresh
	if counts.LocalQueues > 0 {
		if err := b.waitForQueue(ctx, guard, scaleNamespace(counts.LocalQueues-1), scaleLocalQueue); err != nil {
			return err
		}
	}
	res.Sync = time.Since(start)
	fmt.Printf("scale: kueue-guard ready with them after %v; sampling its memory for %v …\n", res.Sync.Round(time.Second), rssWindow)
	res.RSS, res.HWM, err = sampleRSS(ctx, guard.proc.pid())
	return err
}

// waitForQueue waits until kueue-guard's validating webhook no longer warns that
// a LocalQueue is missing: its cache holds it.
func (b *bench) waitForQueue(ctx context.Context, guard *server, namespace, queue string) error {
	job := fixtures.Job(namespace, "scale-probe").Queue(queue).Obj()
	c := &caller{client: newClient(1), url: guard.base + b.endpoint(epValidate).path,
		payload: mustJSON(admissionReview("Job", admissionv1.Create, job, nil)), check: b.endpoint(epValidate).check}
	defer c.client.CloseIdleConnections()
	missing := admission.MissingQueueWarning(queue, namespace)
	return guard.proc.waitUntil(ctx, readyTimeout, func() error {
		if err := c.call(ctx); err != nil {
			return err
		}
		var ar admissionv1.AdmissionReview
		if err := json.Unmarshal(c.buf.Bytes(), &ar); err != nil {
			return err
		}
		if slices.Contains(ar.Response.Warnings, missing) {
			return fmt.Errorf("kueue-guard does not know LocalQueue %s/%s yet", namespace, queue)
		}
		return nil
	})
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// ms renders a duration in milliseconds with three decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }
