package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/test/testenv"
)

// settle is how long the servers idle after start before their memory is read.
const settle = 2 * time.Second

// bench is one run: what it started and what it measured.
type bench struct {
	o       *options
	workDir string
	certDir string
	env     *testenv.Env
	guard   guardArgs
	servers []*server
	eps     []*endpoint
	bodies  []*body
	// policyIDs are the shipped policies, in kueue-guard's order.
	policyIDs []string
	policyDir string
	started   time.Time
	results   results
}

// run is the whole benchmark: everything it starts is stopped, and its temporary
// directory removed, before it returns.
func run(ctx context.Context, o *options) (err error) {
	b := &bench{o: o, started: time.Now()}
	if err := b.prepare(ctx); err != nil {
		return err
	}
	p := makePlan(o, b.eps, b.bodies)
	fmt.Println(p.describe(o))

	cleanup, err := b.makeWorkDir("kueue-guard-bench-")
	if err != nil {
		return err
	}
	defer cleanup()
	b.results.Machine = describeMachine(o)

	if o.goBench != "" {
		b.runPackageBenchmarks(ctx)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer b.stopAll()
	if err := b.startAll(ctx); err != nil {
		return err
	}
	if err := b.probe(ctx); err != nil {
		return err
	}
	if err := b.measure(ctx, p); err != nil {
		return err
	}
	if o.auditWorkloads > 0 {
		if err := b.measureAudit(ctx); err != nil {
			return fmt.Errorf("audit figure: %w", err)
		}
	}
	if o.scale {
		if err := b.measureScale(ctx); err != nil {
			return fmt.Errorf("scale figure: %w", err)
		}
	}
	b.results.Elapsed = time.Since(b.started)
	return b.report()
}

// prepare reads the configuration, the cluster state and the policies, and
// builds the bodies, before anything is started: a mistake there fails at once.
func (b *bench) prepare(ctx context.Context) error {
	for _, f := range []string{b.o.kueueGuard, b.o.opa} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w (make build opa)", err)
		}
	}
	if _, err := testenv.AssetsDir(); err != nil {
		return err
	}
	cfg, err := config.Load(b.o.config)
	if err != nil {
		return err
	}
	state, errs := review.LoadStateFile(b.o.clusterState, cfg.KueueNamespace)
	if len(errs) > 0 {
		return fmt.Errorf("reading %s: %w", b.o.clusterState, errs[0])
	}
	b.policyDir = cfg.Policies.Directory
	ref, err := newReferee(b.policyDir, state.Snapshot)
	if err != nil {
		return fmt.Errorf("%s: %w", b.o.config, err)
	}
	b.policyIDs, b.results.Policies = ref.ids, ref.engine.Policies()
	b.guard = guardArgs{binary: b.o.kueueGuard, config: b.o.config, extra: b.o.guardArgs}
	b.eps = newEndpoints()
	pipeline, err := admission.Build(cfg, testenv.ServerNamespace)
	if err != nil {
		return fmt.Errorf("building kueue-guard's pipeline: %w", err)
	}
	if b.bodies, err = buildBodies(ctx, pipeline, ref); err != nil {
		return err
	}
	return b.buildStreams(ctx, pipeline, ref)
}

// buildStreams builds the distinct-workload streams and their reference
// decisions, which take a while for thousands of requests.
func (b *bench) buildStreams(ctx context.Context, pipeline *admission.Pipeline, ref *referee) error {
	if b.o.streamSize == 0 {
		return nil
	}
	start := time.Now()
	fmt.Printf("building the streams (4 × %d requests) and their reference decisions …\n", b.o.streamSize)
	streams, err := buildStreams(ctx, pipeline, ref, b.o.streamSize, b.o.streamRepeatShare)
	if err != nil {
		return fmt.Errorf("building the streams: %w", err)
	}
	for _, s := range streams {
		b.results.Streams = append(b.results.Streams, summarizeStream(s))
	}
	b.bodies = append(b.bodies, streams...)
	fmt.Printf("built in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// runPackageBenchmarks runs the package benchmarks first, on a quiet machine. A
// failure is reported, not fatal: the packages may be mid-change.
func (b *bench) runPackageBenchmarks(ctx context.Context) {
	fmt.Printf("running the package benchmarks (%s, -benchtime=%s) …\n", b.o.goBench, b.o.benchTime)
	res, err := runGoBenchmarks(ctx, b.o.goBench, b.o.benchTime, 1, benchPackages...)
	if err == nil {
		res, err = rerunRatioBenchmarks(ctx, res, b.o.benchTime)
	}
	b.results.GoBenchmarks = res
	if err != nil {
		b.results.GoBenchmarkError = err.Error()
		fmt.Fprintln(os.Stderr, "package benchmarks failed:", err)
	}
}

// ratioBenchmarkRuns is how often the benchmarks a target divides are run:
// two single runs a minute apart differ by a third on this machine, more than
// the target's margin.
const ratioBenchmarkRuns = 5

// rerunRatioBenchmarks runs each benchmark of the policy-scale target
// ratioBenchmarkRuns times more and puts its median in res in place of the
// single run's (when res holds it: --go-bench may not select it).
func rerunRatioBenchmarks(ctx context.Context, res []goBenchmark, benchtime string) ([]goBenchmark, error) {
	for _, name := range []string{onePolicyBenchmark, manyPolicyBenchmark} {
		i := slices.IndexFunc(res, func(g goBenchmark) bool { return g.Name == name })
		if i < 0 {
			continue
		}
		// In its own package only (an import path, as go test printed it).
		again, err := runGoBenchmarks(ctx, exactBenchPattern(name), benchtime, ratioBenchmarkRuns, res[i].Package)
		if err != nil {
			return res, err
		}
		for _, g := range again {
			if g.Name == name && g.Package == res[i].Package {
				res[i] = g
			}
		}
	}
	return res, nil
}

// exactBenchPattern is the -bench pattern selecting the benchmark name
// (Top/sub/…) and none beside it (/1 and not /10): go test matches each level
// of a name separately, and runs the sub-benchmarks of a match too.
func exactBenchPattern(name string) string {
	levels := strings.Split(name, "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(levels, "/")
}

// startAll starts the control plane with the example cluster, then kueue-guard,
// the floor and OPA, and reads their idle memory.
func (b *bench) startAll(ctx context.Context) error {
	if err := b.startControlPlane(); err != nil {
		return err
	}

	fmt.Println("starting kueue-guard, the floor server and OPA …")
	floor, err := startFloor(ctx, b.workDir, b.certDir)
	if err != nil {
		return err
	}
	b.servers = append(b.servers, floor)
	guard, err := startGuard(ctx, b.guard, filepath.Join(b.workDir, "kueue-guard.log"))
	if err != nil {
		return err
	}
	b.servers = append(b.servers, guard)
	opa, err := startOPA(ctx, b.o.opa, b.policyDir, b.results.Policies, b.workDir, b.certDir)
	if err != nil {
		return err
	}
	b.servers = append(b.servers, opa)
	bindEndpoints(b.eps, floor, guard, opa)
	for _, ep := range b.eps {
		if err := checkLoopback(ep.url()); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settle):
	}
	for _, s := range b.servers {
		if s.Idle, err = readMemory(s.proc.pid()); err != nil {
			return err
		}
	}
	return nil
}

// makeWorkDir makes the run's temporary directory and its serving
// certificate; cleanup removes them.
func (b *bench) makeWorkDir(prefix string) (cleanup func(), err error) {
	if b.workDir, err = os.MkdirTemp("", prefix); err != nil {
		return nil, err
	}
	b.certDir = filepath.Join(b.workDir, "certs")
	if err := writeServingCert(b.certDir); err != nil {
		os.RemoveAll(b.workDir)
		return nil, err
	}
	return func() { os.RemoveAll(b.workDir) }, nil
}

// startControlPlane starts the control plane with kueue-guard's namespace and
// the example cluster, and points kueue-guard's arguments at it.
func (b *bench) startControlPlane() error {
	fmt.Println("starting the control plane (bin/testcp) …")
	env, err := testenv.Start(nil, nil)
	if err != nil {
		return err
	}
	b.env = env
	if out, stderr, err := env.Kubectl(nil, "create", "namespace", testenv.ServerNamespace); err != nil {
		return fmt.Errorf("creating %s: %v: %s%s", testenv.ServerNamespace, err, out, stderr)
	}
	if out, stderr, err := env.Kubectl(nil, "apply", "-f", b.o.clusterState); err != nil {
		return fmt.Errorf("applying %s: %v: %s%s", b.o.clusterState, err, out, stderr)
	}
	b.guard.kubeconfig, b.guard.certDir = env.KubeconfigPath, b.certDir
	// The bench's cluster runs no Kueue manager, so no Kueue webhook is
	// registered; kueue-guard would create every queued workload suspended
	// (kueueAbsent). allow keeps the measured path the one it takes in a
	// cluster with Kueue.
	cfg, err := writeConfig(b.o.config, b.workDir, "config.yaml", func(c map[string]any) { c["kueueAbsent"] = "allow" })
	if err != nil {
		return err
	}
	b.guard.config = cfg
	return nil
}

// stopAll stops the servers and the control plane.
func (b *bench) stopAll() {
	for _, s := range b.servers {
		s.proc.stop()
	}
	if b.env != nil {
		fmt.Println("stopping the control plane")
		if err := b.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
}

// endpoint returns the endpoint of a name.
func (b *bench) endpoint(name string) *endpoint {
	for _, ep := range b.eps {
		if ep.Name == name {
			return ep
		}
	}
	panic("no endpoint " + name)
}

// alive fails when a server has exited: the figures after that would be errors.
func (b *bench) alive() error {
	var errs []error
	for _, s := range b.servers {
		if s.proc.exited() {
			errs = append(errs, fmt.Errorf("%s exited (%v); end of its log:\n%s", s.Name, s.proc.err, s.proc.tail()))
		}
	}
	return errors.Join(errs...)
}
