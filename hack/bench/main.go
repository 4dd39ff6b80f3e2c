// Command bench is `make bench`, kueue-guard's load harness. In one run it starts
// the test control plane (bin/testcp) with the example cluster, `kueue-guard
// serve`, a floor server (the least an admission webhook can do over the same
// transport) and `opa run --server` with the same policies, then drives each
// with the same client over loopback TLS:
//
//   - closed loop at several concurrencies: throughput, latency percentiles and
//     server CPU per request;
//   - open loop at fixed rates below each target's capacity, measured just
//     before each point: latency without coordinated omission;
//   - memory: resident set idle, at peak, and with a large cluster cached (--scale);
//   - the audit: a run over many workloads (--audit-workloads), and admission's
//     p99 while it runs against its p99 between runs;
//   - allocations per request, from the package benchmarks.
//
// It prints the tables and writes docs/performance.md (--out) from a template,
// with every figure also given as a ratio to the floor measured in the same run.
// Child processes and temporary files are cleaned up on exit, Ctrl-C and at the
// --timeout deadline.
//
//	make bench                               # the full run (about 20 minutes)
//	go run ./hack/bench --short --out ''     # the CI smoke run
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// options are the command's flags.
type options struct {
	kueueGuard, opa, config, clusterState string
	out                                   string
	duration, warmup                      time.Duration
	reps                                  int
	concurrency                           []int
	matrixConcurrency                     int
	openFractions                         []float64
	openWorkers                           int
	// openCapacity is the closed loop that measures a target's capacity just
	// before each of its open-loop points (0: the matrix point's rate).
	openCapacity       time.Duration
	goBench, benchTime string
	scale              bool
	scaleCounts        scaleCounts
	timeout            time.Duration
	short              bool
	// soak, when set, runs the soak (soak.go) for that long instead.
	soak time.Duration
	// guardArgs are more arguments of kueue-guard serve.
	guardArgs []string
	// The audit figure (audit.go): workloads (0: none), the audit.interval
	// and how many intervals the load runs.
	auditWorkloads int
	auditInterval  time.Duration
	auditRuns      int
	// The distinct-workload streams (stream.go): requests per stream (0:
	// none) and the share of them whose shape other requests share.
	streamSize        int
	streamRepeatShare float64
}

// shortPreset is what --short sets, for the flags not given explicitly: every
// point measured once, briefly, no scale figure, package benchmarks run a few
// times each. It checks that everything works, not how fast.
var shortPreset = map[string]string{
	"duration":      "300ms",
	"open-capacity": "300ms",
	"warmup":        "100ms",
	"reps":          "1",
	"scale":         "false",
	"benchtime":     "20x",
	"timeout":       "10m",
	// A few hundred workloads, audited twice: the figure's code runs, its
	// figures are not what the full run measures.
	"audit-workloads": "260",
	"audit-interval":  "2s",
	"audit-runs":      "2",
	// Enough requests that each point cycles through a stream of distinct
	// workloads, few enough that building and checking them takes seconds.
	"stream-size": "200",
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == floorMode {
		if err := runFloor(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench floor:", err)
			os.Exit(1)
		}
		return
	}
	// The control plane's helpers log through controller-runtime; their
	// errors are returned, so the log is not needed.
	ctrllog.SetLogger(logr.Discard())
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := runWithSignals(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	o := &options{concurrency: []int{1, 8, 32}, openFractions: []float64{0.25, 0.5, 0.75}}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.kueueGuard, "kueue-guard", "bin/kueue-guard", "The kueue-guard binary (make build)")
	fs.StringVar(&o.opa, "opa", "bin/opa", "The OPA binary (make opa)")
	fs.StringVar(&o.config, "config", "examples/config.yaml", "kueue-guard's configuration; its policies.directory is what OPA loads too")
	fs.StringVar(&o.clusterState, "cluster-state", "examples/cluster-state.yaml", "Objects applied to the control plane, and the view OPA's input is built from")
	fs.StringVar(&o.out, "out", "", "Write the report to this Markdown file (empty: only print the tables)")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "Length of each repetition of a closed-loop point, and of each open-loop point")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "Unmeasured load before each closed-loop point")
	fs.IntVar(&o.reps, "reps", 3, "Repetitions of each closed-loop point")
	fs.Func("concurrency", "Comma-separated closed-loop concurrencies of the headline rows (default 1,8,32)", intList(&o.concurrency))
	fs.IntVar(&o.matrixConcurrency, "matrix-concurrency", 8, "Concurrency at which every endpoint is measured with every body")
	fs.Func("open-fractions", "Comma-separated open-loop rates, as fractions of each target's capacity (see --open-capacity) (default 0.25,0.5,0.75)", floatList(&o.openFractions))
	fs.IntVar(&o.openWorkers, "open-workers", 64, "Most requests in flight in the open loop")
	fs.DurationVar(&o.openCapacity, "open-capacity", 2*time.Second,
		"Closed loop at --matrix-concurrency, just before each open-loop point, whose rate the point's fraction is of (0: the closed-loop point's rate)")
	fs.StringVar(&o.goBench, "go-bench", "BenchmarkHandler|BenchmarkWorkload|BenchmarkEvaluateShipped|BenchmarkShippedPolicy|BenchmarkEvaluateNPolicies",
		"Package benchmarks to run (go test -bench; empty: none)")
	fs.StringVar(&o.benchTime, "benchtime", "1s", "go test -benchtime of the package benchmarks")
	fs.BoolVar(&o.scale, "scale", true, "Measure kueue-guard's memory with a large cluster cached")
	fs.IntVar(&o.scaleCounts.Namespaces, "scale-namespaces", 10000, "Namespaces of the scale figure, one LocalQueue each")
	fs.IntVar(&o.scaleCounts.ClusterQueues, "scale-cluster-queues", 1000, "ClusterQueues of the scale figure")
	fs.IntVar(&o.scaleCounts.Deployments, "scale-deployments", 2000, "Deployments of the scale figure, spread over its namespaces")
	fs.IntVar(&o.auditWorkloads, "audit-workloads", 5000, "Workloads of the audit figure (0: no audit figure), every kind in turn")
	fs.DurationVar(&o.auditInterval, "audit-interval", time.Minute, "audit.interval of the audit figure's server (the default's)")
	fs.IntVar(&o.auditRuns, "audit-runs", 2, "Intervals the audit figure's admission load runs for")
	fs.IntVar(&o.streamSize, "stream-size", 2000, "Requests of each distinct-workload stream (Job and JobSet, CREATE and UPDATE; 0: no streams)")
	fs.Float64Var(&o.streamRepeatShare, "stream-repeat-share", 0.5,
		"Share of a stream's requests whose shape (spec) a few other requests share, as a CronJob's Jobs do; the others' shapes are unique in the stream")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "Hard deadline of the whole run")
	fs.BoolVar(&o.short, "short", false, "CI preset: "+describePreset())
	fs.Func("guard-arg", "One more argument of kueue-guard serve (repeatable), e.g. --guard-arg=--pprof-bind-address=127.0.0.1:6060", func(v string) error {
		o.guardArgs = append(o.guardArgs, v)
		return nil
	})
	fs.DurationVar(
		&o.soak,
		"soak",
		0,
		"Instead of the benchmark, soak --kueue-guard (make soak builds it with -race) this long at 80% of the throughput it reaches here; fails on any failed request or a growing resident set",
	)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.short {
		if err := applyPreset(fs); err != nil {
			return nil, err
		}
	}
	o.scaleCounts.LocalQueues = o.scaleCounts.Namespaces
	return o, o.validate()
}

// applyPreset sets the short preset's flags that were not given.
func applyPreset(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, value := range shortPreset {
		if !given[name] {
			if err := fs.Set(name, value); err != nil {
				return err
			}
		}
	}
	return nil
}

func describePreset() string {
	var parts []string
	for _, name := range []string{"duration", "warmup", "reps", "scale", "benchtime", "timeout", "audit-workloads", "audit-interval", "audit-runs", "stream-size"} {
		parts = append(parts, "--"+name+"="+shortPreset[name])
	}
	return strings.Join(parts, " ")
}

func (o *options) validate() error {
	switch {
	case o.duration <= 0 || o.warmup < 0 || o.openCapacity < 0:
		return errors.New("--duration must be positive, --warmup and --open-capacity not negative")
	case o.reps < 1:
		return errors.New("--reps must be at least 1")
	case o.matrixConcurrency < 1 || o.openWorkers < 1:
		return errors.New("--matrix-concurrency and --open-workers must be at least 1")
	case o.timeout <= 0:
		return errors.New("--timeout must be positive")
	case o.auditWorkloads < 0 || o.auditRuns < 1 || o.auditInterval < time.Second:
		return errors.New("--audit-workloads must not be negative, --audit-runs at least 1 and --audit-interval at least 1s")
	case o.streamSize < 0 || o.streamRepeatShare < 0 || o.streamRepeatShare > 1:
		return errors.New("--stream-size must not be negative and --stream-repeat-share must be between 0 and 1")
	case len(o.openFractions) == 0:
		return errors.New("--open-fractions must name at least one rate")
	}
	for _, c := range o.concurrency {
		if c < 1 {
			return fmt.Errorf("--concurrency %d: must be at least 1", c)
		}
	}
	for _, f := range o.openFractions {
		if f <= 0 || f >= 1 {
			return fmt.Errorf("--open-fractions %v: must be between 0 and 1", f)
		}
	}
	return nil
}

// goBenchEstimate guesses how long the package benchmarks take: compiling, and
// about twenty benchmarks of at least benchtime each, and the ratio
// benchmarks run again.
func (o *options) goBenchEstimate() time.Duration {
	per := time.Second
	if d, err := time.ParseDuration(o.benchTime); err == nil {
		per = d + d/2
	} else if strings.HasSuffix(o.benchTime, "x") {
		per = 300 * time.Millisecond
	}
	return 30*time.Second + (20+2*ratioBenchmarkRuns)*per
}

func intList(dst *[]int) func(string) error {
	return func(s string) error {
		var out []int
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		*dst = out
		return nil
	}
}

func floatList(dst *[]float64) func(string) error {
	return func(s string) error {
		var out []float64
		for f := range strings.SplitSeq(s, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		*dst = out
		return nil
	}
}

// runWithSignals runs the benchmark until it is done, Ctrl-C or SIGTERM, or the
// deadline. After the first signal the default handling is restored, so that a
// second Ctrl-C stops at once (the children die with the harness).
func runWithSignals(o *options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	go func() {
		<-ctx.Done()
		stop()
	}()
	var err error
	if o.soak > 0 {
		err = runSoak(ctx, o, o.soak)
	} else {
		err = run(ctx, o)
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("stopped at the %v deadline (--timeout): %w", o.timeout, err)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}
