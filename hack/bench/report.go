package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"text/template"
	"time"

	_ "embed" // the report template
)

//go:embed performance.md.tmpl
var reportTemplate string

// reportData is what the template renders: the run's settings, the machine and
// the tables, already rendered.
type reportData struct {
	Command                         string
	Duration, Warmup                time.Duration
	Reps, MatrixConcurrency         int
	Concurrency                     []int
	OpenWorkers                     int
	OpenCapacity                    time.Duration
	BenchTime                       string
	Machine                         machine
	Elapsed                         time.Duration
	Policies                        []string
	Bodies, Matrix, Levels, Open    string
	Memory, Scale, GoBench, Targets string
	Audit                           string
	AuditWorkloads, AuditKinds      int
	AuditInterval                   time.Duration
	GoBenchmarkError                string
	Mismatches                      []string
	ScaleCounts                     scaleCounts
	// The distinct-workload streams: their table and closed-loop rows, how
	// they are made, and the decision check.
	Streams, StreamMatrix        string
	StreamSize, RepeatedShapes   int
	StreamSeed                   uint64
	RepeatSharePct, GrowSharePct float64
	DecisionsChecked             int
	DecisionMismatches           []string
	// OpenWorst is the validating webhook's worst open-loop point against
	// the floor, or empty.
	OpenWorst string
}

// report prints the tables and, with --out, writes the Markdown report.
func (b *bench) report() error {
	r := &b.results
	d := reportData{
		Command:  strings.Join(append([]string{"go run ./hack/bench"}, os.Args[1:]...), " "),
		Duration: b.o.duration, Warmup: b.o.warmup, Reps: b.o.reps, MatrixConcurrency: b.o.matrixConcurrency,
		Concurrency: b.o.concurrency, OpenWorkers: b.o.openWorkers, OpenCapacity: b.o.openCapacity, BenchTime: b.o.benchTime,
		Machine: r.Machine, Elapsed: r.Elapsed.Round(time.Second),
		Bodies: bodiesTable(r).String(),
		Matrix: closedTable(r, func(x *closedResult) bool { return x.c == b.o.matrixConcurrency && x.body.Stream == nil }, false).String(),
		Levels: closedTable(r, func(x *closedResult) bool { return isHeadline(x.ep, x.body) }, true).String(),
		Open:   openTable(r).String(), Memory: memoryTable(r).String(), GoBench: goBenchTable(r).String(),
		Targets:          targetsTable(evaluateTargets(r, b.o.matrixConcurrency)).String(),
		GoBenchmarkError: r.GoBenchmarkError, Mismatches: r.Mismatches,
	}
	for _, p := range r.Policies {
		d.Policies = append(d.Policies, p.ID)
	}
	b.reportStreams(&d)
	if x, v := worstOpen(r); x != nil {
		d.OpenWorst = describeOpenRatio(r, x, v)
		if t := x.GC; t != nil && t.Tail != nil {
			d.OpenWorst += fmt.Sprintf("; %d of its %d slowest requests were in flight during the collector's %d cycles, which took %.1f %% of its time",
				t.Tail.InCycles, t.Tail.Tail, t.Cycles, 100*t.Tail.TimeShare)
		}
	}
	if r.Scale != nil {
		d.Scale, d.ScaleCounts = scaleTable(r.Scale).String(), r.Scale.Counts
	}
	if a := r.Audit; a != nil {
		d.Audit, d.AuditWorkloads, d.AuditKinds, d.AuditInterval = auditTable(a).String(), a.Workloads, a.Kinds, a.Interval
	}
	if len(r.GoBenchmarks) == 0 {
		d.GoBench = ""
	}
	printTables(d)
	if b.o.out == "" {
		return nil
	}
	tmpl, err := template.New("performance.md").Parse(reportTemplate)
	if err != nil {
		return fmt.Errorf("internal error: the report template: %w", err)
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, d); err != nil {
		return fmt.Errorf("rendering the report: %w", err)
	}
	if err := os.WriteFile(b.o.out, []byte(out.String()), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", b.o.out)
	return nil
}

// reportStreams fills in the streams' part of the report.
func (b *bench) reportStreams(d *reportData) {
	r := &b.results
	d.StreamSize, d.RepeatedShapes, d.StreamSeed = b.o.streamSize, repeatedShapes, streamSeed
	d.RepeatSharePct, d.GrowSharePct = 100*b.o.streamRepeatShare, 100*growShare
	d.DecisionsChecked, d.DecisionMismatches = r.Decisions.Checked, r.Decisions.Mismatches
	if len(r.Streams) == 0 {
		return
	}
	d.Streams = streamsTable(r).String()
	d.StreamMatrix = closedTable(r, func(x *closedResult) bool { return x.body.Stream != nil }, false).String()
}

func printTables(d reportData) {
	for _, s := range []struct{ title, table string }{
		{"Bodies", d.Bodies},
		{"Streams", d.Streams},
		{fmt.Sprintf("Closed loop, C=%d", d.MatrixConcurrency), d.Matrix},
		{fmt.Sprintf("Closed loop, distinct-workload streams, C=%d", d.MatrixConcurrency), d.StreamMatrix},
		{"Closed loop, headline rows by concurrency", d.Levels},
		{"Open loop", d.Open},
		{"Memory", d.Memory},
		{"Audit", d.Audit},
		{"Scale", d.Scale},
		{"Package benchmarks", d.GoBench},
		{"Targets", d.Targets},
	} {
		if s.table != "" {
			fmt.Printf("\n## %s\n\n%s", s.title, s.table)
		}
	}
	for _, m := range d.Mismatches {
		fmt.Println("!!! OPA and kueue-guard disagree:", m)
	}
	fmt.Printf("\ndecisions checked: %d requests, %d mismatches\n", d.DecisionsChecked, len(d.DecisionMismatches))
	if d.OpenWorst != "" {
		fmt.Println("worst open-loop point of /validate-workloads:", d.OpenWorst)
	}
	fmt.Println()
}

func bodiesTable(r *results) *table {
	t := newTable("body", "AdmissionReview bytes>", "OPA input bytes>", "/mutate-workloads", "/validate-workloads", "policy findings")
	for _, b := range r.Bodies {
		input := "–"
		if b.InputBytes > 0 {
			input = strconv.Itoa(b.InputBytes)
		}
		findings := b.Findings
		if findings == "" {
			findings = "not run (no queue)"
		}
		mutate := b.Mutate
		if mutate == "" {
			mutate = "–"
		}
		t.add(b.Name, strconv.Itoa(b.ReviewBytes), input, mutate, b.Validate, findings)
	}
	return t
}

// streamsTable describes each stream, and what the policies decide on its
// requests by the reference evaluation.
func streamsTable(r *results) *table {
	t := newTable("stream", "requests>", "shapes>", "of a repeated shape>", "growing>", "AdmissionReview bytes, mean (min–max)>",
		"OPA input bytes, mean>", "allowed>", "denied>", "with warnings>")
	for _, s := range r.Streams {
		t.add(s.Name, strconv.Itoa(s.Requests), strconv.Itoa(s.Shapes), strconv.Itoa(s.Repeated), strconv.Itoa(s.Grows),
			fmt.Sprintf("%.0f (%d–%d)", s.ReviewMean, s.ReviewMin, s.ReviewMax), fmt.Sprintf("%.0f", s.InputMean),
			strconv.Itoa(s.Allowed), strconv.Itoa(s.Denied), strconv.Itoa(s.WithWarnings))
	}
	return t
}

// closedTable renders the closed-loop results keep selects, with each figure's
// ratio to the floor's of the same kind, operation and concurrency.
func closedTable(r *results, keep func(*closedResult) bool, withC bool) *table {
	header := []string{"target", "body"}
	if withC {
		header = append(header, "C>")
	}
	header = append(header, "rps>", "rps ×floor>", "p50 ms>", "p90 ms>", "p99 ms>", "p99 ×floor>", "max ms>", "CPU ms/req>", "decisions reused>", "errors>")
	t := newTable(header...)
	for i := range r.Closed {
		x := &r.Closed[i]
		if !keep(x) {
			continue
		}
		row := []string{x.ep.Label, x.body.Name}
		if withC {
			row = append(row, strconv.Itoa(x.c))
		}
		rpsRatio, p99Ratio := "–", "–"
		if f := r.floorOf(x); f != nil && x.ep.Name != epFloor {
			rpsRatio, p99Ratio = ratio(x.RPS, f.RPS), ratio(float64(x.Latency.P99), float64(f.Latency.P99))
		}
		row = append(row, rpsCell(x), rpsRatio, msf(x.Latency.P50), msf(x.Latency.P90), msf(x.Latency.P99),
			p99Ratio, msf(x.Latency.Max), msf(x.CPUPerRequest), x.Decisions.reusedCell(), errorsCell(x.Errors, x.FirstError))
		t.add(row...)
	}
	return t
}

// rpsCell is the mean throughput and, with repetitions, how far the farthest
// one was from it.
func rpsCell(x *closedResult) string {
	if len(x.RepRPS) < 2 || x.RPS <= 0 {
		return fmt.Sprintf("%.0f", x.RPS)
	}
	var spread float64
	for _, v := range x.RepRPS {
		spread = max(spread, math.Abs(v-x.RPS)/x.RPS)
	}
	return fmt.Sprintf("%.0f ±%.0f%%", x.RPS, 100*spread)
}

func openTable(r *results) *table {
	t := newTable("target", "body", "load>", "capacity/s>", "rate/s>", "achieved/s>", "p50 ms>", "p99 ms>", "p99 ×floor>", "max ms>", "queued>", "GC cycles (CPU ms)>", "p99 tail in GC>", "errors>")
	for i := range r.Open {
		x := &r.Open[i]
		p99Ratio := "–"
		if f := r.floorOpen(x); f != nil && x.ep.Name != epFloor {
			p99Ratio = ratio(float64(x.Latency.P99), float64(f.Latency.P99))
		}
		t.add(x.ep.Label, x.body.Name, fmt.Sprintf("%.0f%%", 100*x.fraction), fmt.Sprintf("%.0f", x.Capacity), fmt.Sprintf("%.0f", x.Rate),
			fmt.Sprintf("%.0f", x.Achieved), msf(x.Latency.P50), msf(x.Latency.P99), p99Ratio, msf(x.Latency.Max),
			strconv.Itoa(x.Queued), gcCell(x.GC), gcTailCell(x.GC), errorsCell(x.Errors, x.FirstError))
	}
	return t
}

// gcCell renders a point's collector cycles and their CPU: "7 (85)", or "–".
func gcCell(g *gcDelta) string {
	if g == nil {
		return "–"
	}
	return fmt.Sprintf("%d (%.0f)", g.Cycles, float64(g.CPU)/float64(time.Millisecond))
}

func memoryTable(r *results) *table {
	t := newTable("server", "idle RSS MiB>", "idle anonymous MiB>", "idle file-backed MiB>", "peak RSS MiB (VmHWM)>")
	for _, m := range r.Memory {
		t.add(m.Name, fmt.Sprintf("%.1f", mib(m.Idle.RSS)), fmt.Sprintf("%.1f", mib(m.Idle.Anon)),
			fmt.Sprintf("%.1f", mib(m.Idle.File)), fmt.Sprintf("%.1f", mib(m.Peak.HWM)))
	}
	return t
}

func scaleTable(s *scaleResult) *table {
	t := newTable("figure", "value>")
	t.add("Namespaces / LocalQueues / ClusterQueues / Deployments", fmt.Sprintf("%d / %d / %d / %d",
		s.Counts.Namespaces, s.Counts.LocalQueues, s.Counts.ClusterQueues, s.Counts.Deployments))
	t.add("time to create them", s.Create.Round(time.Second).String())
	t.add("kueue-guard start until it knows the last LocalQueue", s.Sync.Round(100*time.Millisecond).String())
	t.add(fmt.Sprintf("RSS, largest of %v of samples (MiB)", rssWindow), fmt.Sprintf("%.1f", mib(s.RSS)))
	t.add("peak RSS since start, VmHWM (MiB)", fmt.Sprintf("%.1f", mib(s.HWM)))
	return t
}

func auditTable(a *auditResult) *table {
	t := newTable("figure", "value>")
	t.add("workloads (kinds, in turn)", fmt.Sprintf("%d (%d)", a.Workloads, a.Kinds))
	t.add("time to create them", a.Create.Round(time.Second).String())
	t.add("audit.interval", a.Interval.String())
	for i, r := range a.Runs {
		t.add(fmt.Sprintf("run %d: workloads judged, time", i+1), fmt.Sprintf("%d, %v", r.Scanned, r.Took.Round(time.Millisecond)))
	}
	t.add("admission load (Job CREATE +queue, open loop)", fmt.Sprintf("%.0f/s", a.Rate))
	t.add("requests due during a run: count, p50, p99, max (ms)", fmt.Sprintf("%d, %s, %s, %s",
		a.DuringN, msf(a.During.P50), msf(a.During.P99), msf(a.During.Max)))
	t.add("requests due between runs: count, p50, p99, max (ms)", fmt.Sprintf("%d, %s, %s, %s",
		a.BetweenN, msf(a.Between.P50), msf(a.Between.P99), msf(a.Between.Max)))
	t.add("p99 during ÷ p99 between", fmt.Sprintf("%.2f×", float64(a.During.P99)/float64(max(1, a.Between.P99))))
	t.add("failed requests", strconv.Itoa(a.Errs))
	return t
}

func goBenchTable(r *results) *table {
	t := newTable("package", "benchmark", "ns/op>", "B/op>", "allocs/op>")
	for _, b := range r.GoBenchmarks {
		t.add(strings.TrimPrefix(b.Package, "github.com/kueue-guard/kueue-guard/"), b.Name,
			metric(b, "ns/op"), metric(b, "B/op"), metric(b, "allocs/op"))
	}
	return t
}

func metric(b goBenchmark, unit string) string {
	v, ok := b.Metrics[unit]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}

func ratio(x, floor float64) string {
	if floor <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x/floor)
}

// msf renders a duration in milliseconds for a table cell.
func msf(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func errorsCell(n int, first string) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", n, truncate(strings.ReplaceAll(first, "|", "/"), 60))
}
