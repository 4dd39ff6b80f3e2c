package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	guardserver "github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// The audit figure: kueue-guard restarted with a short audit.interval over a
// cluster holding many workloads, under an open-loop admission load for several
// intervals. The audit runs are read from the server's metrics as they end, and
// every request is put in one of two sets by when it was due: during a run, or
// between runs. Both sets come from the same process at the same rate in the
// same minute, so their p99s compare the audit's cost and nothing else.
const (
	// auditLabel marks the figure's workloads, which it deletes at the end.
	auditLabel = "bench.kueue-guard.io/audit"
	// auditPoll is how often the metrics are read for a finished run.
	auditPoll = 100 * time.Millisecond
)

// auditNamespaces are the example cluster's namespaces and a LocalQueue in
// each; the workloads are spread over them.
var auditNamespaces = []struct{ namespace, queue string }{{"team-a", "team-a-queue"}, {"ml", "default"}}

// auditRun is one audit run as the metrics told it.
type auditRun struct {
	Start   time.Time
	Took    time.Duration
	Scanned int
}

// auditResult is the audit figure.
type auditResult struct {
	// Workloads were created (of Kinds kinds); Interval is the audit.interval
	// the server ran with; Rate the admission load's.
	Workloads, Kinds int
	Create           time.Duration
	Interval         time.Duration
	Rate             float64
	// Runs are those that ended while the load ran (the first run, on a cold
	// server, is left out).
	Runs []auditRun
	// During and Between are the latencies of the requests due during a run
	// and between runs.
	During, Between         latency
	DuringN, BetweenN, Errs int
	FirstError              string
}

// longestRun is the slowest measured run.
func (a *auditResult) longestRun() time.Duration {
	var d time.Duration
	for _, r := range a.Runs {
		d = max(d, r.Took)
	}
	return d
}

// measureAudit creates the workloads, restarts kueue-guard with the audit
// every --audit-interval, measures, and deletes the workloads again (the scale
// figure after it is about the cache, not the audit).
func (b *bench) measureAudit(ctx context.Context) error {
	n, interval := b.o.auditWorkloads, b.o.auditInterval
	kinds := fixtures.EveryKind("x")
	fmt.Printf("audit: creating %d workloads of %d kinds …\n", n, len(kinds))
	start := time.Now()
	created, err := createAuditWorkloads(ctx, b.env.Config, n)
	res := &auditResult{Workloads: created, Kinds: len(kinds), Create: time.Since(start), Interval: interval}
	b.results.Audit = res
	defer func() {
		if err := deleteAuditWorkloads(context.WithoutCancel(ctx), b.env.Config); err != nil {
			fmt.Fprintln(os.Stderr, "audit: deleting the workloads:", err)
		}
	}()
	if err != nil {
		return fmt.Errorf("created %d of %d workloads: %w", created, n, err)
	}
	closed := b.results.closed(epValidate, "Job CREATE +queue", b.o.matrixConcurrency)
	if closed == nil || closed.RPS <= 0 {
		return errors.New("no closed-loop figure for /validate-workloads to set the load's rate from")
	}
	res.Rate = b.o.openFractions[0] * closed.RPS

	cfgPath, err := auditConfig(b.guard.config, b.workDir, interval)
	if err != nil {
		return err
	}
	fmt.Printf("audit: created in %v; restarting kueue-guard with audit.interval %v …\n", res.Create.Round(time.Second), interval)
	guard := b.endpoint(epValidate).srv
	guard.proc.stop()
	args := b.guard
	args.config = cfgPath
	fresh, err := startGuard(ctx, args, filepath.Join(b.workDir, "kueue-guard-audit.log"))
	if err != nil {
		return err
	}
	*guard = *fresh

	runs := &runLog{}
	pctx, stopPolling := context.WithCancel(ctx)
	polled := make(chan error, 1)
	go func() { polled <- runs.poll(pctx, guard.metrics) }()
	defer stopPolling()

	// The first run (cold caches, a Lease to take) is not measured; the
	// load starts when it is over.
	if err := runs.waitFor(ctx, 1, 3*interval+readyTimeout, polled); err != nil {
		return err
	}
	body := b.bodyNamed("Job CREATE +queue")
	window := time.Duration(b.o.auditRuns) * interval
	fmt.Printf("audit: first run over %d workloads took %v; %v of admission at %.0f/s …\n",
		runs.last().Scanned, runs.last().Took.Round(time.Millisecond), window, res.Rate)
	newCaller, done := callers(b.endpoint(epValidate), body, b.o.openWorkers)
	defer done()
	loadStart := time.Now()
	r := openLoop(ctx, newCaller, res.Rate, window, b.o.openWorkers)
	loadEnd := time.Now()
	if err := ctx.Err(); err != nil {
		return err
	}
	// The run under way when the load ended is known once it is over.
	if err := runs.waitForStartAfter(ctx, loadEnd, 2*interval, polled); err != nil {
		return fmt.Errorf("%w; end of kueue-guard's log:\n%s", err, guard.proc.tail())
	}
	stopPolling()
	if err := b.alive(); err != nil {
		return err
	}
	for _, run := range runs.all() {
		if run.Start.Add(run.Took).After(loadStart) && run.Start.Before(loadEnd) {
			res.Runs = append(res.Runs, run)
		}
	}
	var during, between []time.Duration
	for i, lat := range r.latencies {
		if res.inRun(r.sent[i]) {
			during = append(during, lat)
		} else {
			between = append(between, lat)
		}
	}
	res.During, res.Between, res.DuringN, res.BetweenN = summarize(during), summarize(between), len(during), len(between)
	res.Errs = r.errors
	if r.firstError != nil {
		res.FirstError = r.firstError.Error()
	}
	fmt.Printf("audit: %d runs, longest %v (interval %v); p99 during runs %v (%d requests), between runs %v (%d), errors %d\n",
		len(res.Runs), res.longestRun().Round(time.Millisecond), interval, ms(res.During.P99), res.DuringN,
		ms(res.Between.P99), res.BetweenN, res.Errs)
	if len(res.Runs) == 0 || res.DuringN == 0 || res.BetweenN == 0 {
		return fmt.Errorf("the load did not overlap both audit runs and the time between them (%d runs, %d requests during, %d between)",
			len(res.Runs), res.DuringN, res.BetweenN)
	}
	return nil
}

// inRun reports whether t is within one of the measured runs.
func (a *auditResult) inRun(t time.Time) bool {
	for _, r := range a.Runs {
		if !t.Before(r.Start) && t.Before(r.Start.Add(r.Took)) {
			return true
		}
	}
	return false
}

// bodyNamed finds a body.
func (b *bench) bodyNamed(name string) *body {
	for _, x := range b.bodies {
		if x.Name == name {
			return x
		}
	}
	panic("no body " + name)
}

// auditConfig writes a copy of the configuration with audit.interval set.
func auditConfig(path, dir string, interval time.Duration) (string, error) {
	return writeConfig(path, dir, "config-audit.yaml", func(cfg map[string]any) {
		audit, _ := cfg["audit"].(map[string]any)
		if audit == nil {
			audit = map[string]any{}
		}
		audit["interval"] = interval.String()
		cfg["audit"] = audit
	})
}

// writeConfig writes a copy of the configuration at path into dir, as name,
// edited by edit; it returns the copy's path.
func writeConfig(path, dir, name string, edit func(map[string]any)) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	edit(cfg)
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, out, 0o644)
}

// createAuditWorkloads creates n workloads, each kind the fixtures build in
// turn, spread over auditNamespaces with their queue, labelled auditLabel.
func createAuditWorkloads(ctx context.Context, cfg *rest.Config, n int) (int, error) {
	c, err := fastClient(cfg)
	if err != nil {
		return 0, err
	}
	return parallel(ctx, n, func(ctx context.Context, i int) error {
		at := auditNamespaces[i%len(auditNamespaces)]
		kinds := fixtures.EveryKind(at.namespace)
		o := kinds[(i/len(auditNamespaces))%len(kinds)].Queue(at.queue).Obj()
		o.SetName(fmt.Sprintf("audit-%05d", i))
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[auditLabel] = "true"
		o.SetLabels(labels)
		return client.IgnoreAlreadyExists(c.Create(ctx, o))
	})
}

// deleteAuditWorkloads deletes every workload labelled auditLabel.
func deleteAuditWorkloads(ctx context.Context, cfg *rest.Config) error {
	c, err := fastClient(cfg)
	if err != nil {
		return err
	}
	for _, at := range auditNamespaces {
		for _, k := range fixtures.EveryKind(at.namespace) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(k.GroupVersionKind())
			if err := c.DeleteAllOf(ctx, u, client.InNamespace(at.namespace), client.MatchingLabels{auditLabel: "true"},
				client.PropagationPolicy("Background")); err != nil {
				return fmt.Errorf("deleting %s: %w", k.GetKind(), err)
			}
		}
	}
	return nil
}

// fastClient is a client allowed a high request rate, for creating objects in
// bulk.
func fastClient(cfg *rest.Config) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 10000
	return client.New(cfg, client.Options{Scheme: guardserver.Scheme()})
}

// runLog collects the audit runs the metrics report as they end.
type runLog struct {
	mu   sync.Mutex
	runs []auditRun
}

// Names of the metrics a run is read from.
const (
	metricLastRun  = "kueue_guard_audit_last_run_timestamp_seconds"
	metricDuration = "kueue_guard_audit_last_run_duration_seconds"
	metricScanned  = "kueue_guard_audit_objects_scanned"
)

// poll reads the metrics every auditPoll until ctx ends, recording each new run.
func (l *runLog) poll(ctx context.Context, url string) error {
	var lastStart float64
	for {
		v, err := readMetrics(ctx, url, metricLastRun, metricDuration, metricScanned)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // the measurement ended: a read cut short by it is no failure
		}
		if err != nil {
			return err
		}
		if ts := v[metricLastRun]; ts > 0 && ts != lastStart {
			lastStart = ts
			sec := int64(ts)
			run := auditRun{Start: time.Unix(sec, int64((ts-float64(sec))*1e9)),
				Took: time.Duration(v[metricDuration] * float64(time.Second)), Scanned: int(v[metricScanned])}
			l.mu.Lock()
			l.runs = append(l.runs, run)
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(auditPoll):
		}
	}
}

func (l *runLog) all() []auditRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]auditRun(nil), l.runs...)
	slices.SortFunc(out, func(a, b auditRun) int { return a.Start.Compare(b.Start) })
	return out
}

func (l *runLog) last() auditRun {
	all := l.all()
	return all[len(all)-1]
}

// waitUntil waits until done holds of the runs, for at most timeout.
func (l *runLog) waitUntil(ctx context.Context, timeout time.Duration, polled <-chan error, what string, done func([]auditRun) bool) error {
	deadline := time.After(timeout)
	for !done(l.all()) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-polled:
			return fmt.Errorf("reading the audit metrics: %v", err)
		case <-deadline:
			return fmt.Errorf("no audit run %s within %v (runs seen: %d)", what, timeout, len(l.all()))
		case <-time.After(auditPoll):
		}
	}
	return nil
}

func (l *runLog) waitFor(ctx context.Context, n int, timeout time.Duration, polled <-chan error) error {
	return l.waitUntil(ctx, timeout, polled, fmt.Sprintf("number %d ended", n), func(rs []auditRun) bool { return len(rs) >= n })
}

func (l *runLog) waitForStartAfter(ctx context.Context, t time.Time, timeout time.Duration, polled <-chan error) error {
	return l.waitUntil(ctx, timeout, polled, "started after the load and ended", func(rs []auditRun) bool {
		return len(rs) > 0 && rs[len(rs)-1].Start.After(t)
	})
}
