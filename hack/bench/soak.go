package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kueue-guard/kueue-guard/test/testenv"
)

// The soak (make soak): kueue-guard alone, usually built with -race, under an
// open-loop load of every body to both workload webhooks at a fraction of the
// throughput it reaches in this run, for a long time. It passes when no
// request fails and the resident set is flat: what a leak or a race shows
// only over time.
const (
	// soakCapacityTime is how long the closed loop that measures the
	// server's throughput runs, at --matrix-concurrency.
	soakCapacityTime = 10 * time.Second
	// soakFraction of that throughput is the soak's rate.
	soakFraction = 0.8
	// soakWindow is how often the resident set is read (each window is one
	// open-loop run).
	soakWindow = 30 * time.Second
	// soakGrowth is how much the resident set may grow from the end of the
	// first quarter (after warm-up: caches, pools, the canary ring full) to
	// the end.
	soakGrowth = 1.10
)

// soakWindowResult is one window of the soak.
type soakWindowResult struct {
	at       time.Duration
	requests int
	errors   int
	p99      time.Duration
	rss      uint64
}

// runSoak runs the soak for d and prints its table; it fails on any failed
// request, on the server exiting, and on a resident set that grew more than
// soakGrowth.
func runSoak(ctx context.Context, o *options, d time.Duration) (err error) {
	b := &bench{o: o, started: time.Now()}
	if err := b.prepareSoak(ctx); err != nil {
		return err
	}
	if b.workDir, err = os.MkdirTemp("", "kueue-guard-soak-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.workDir)
	b.certDir = filepath.Join(b.workDir, "certs")
	if err := writeServingCert(b.certDir); err != nil {
		return err
	}
	defer b.stopAll()
	fmt.Println("starting the control plane (bin/testcp) …")
	if b.env, err = testenv.Start(nil, nil); err != nil {
		return err
	}
	if out, stderr, err := b.env.Kubectl(nil, "create", "namespace", testenv.ServerNamespace); err != nil {
		return fmt.Errorf("creating %s: %v: %s%s", testenv.ServerNamespace, err, out, stderr)
	}
	if out, stderr, err := b.env.Kubectl(nil, "apply", "-f", o.clusterState); err != nil {
		return fmt.Errorf("applying %s: %v: %s%s", o.clusterState, err, out, stderr)
	}
	b.guard.kubeconfig, b.guard.certDir = b.env.KubeconfigPath, b.certDir
	fmt.Printf("starting %s …\n", o.kueueGuard)
	guard, err := startGuard(ctx, b.guard, filepath.Join(b.workDir, "kueue-guard.log"))
	if err != nil {
		return err
	}
	b.servers = append(b.servers, guard)
	idle, err := readMemory(guard.proc.pid())
	if err != nil {
		return err
	}

	// Every body to both workload webhooks, each worker starting at another.
	var mix []request
	for _, path := range []string{epMutate, epValidate} {
		ep := b.endpoint(path)
		ep.srv = guard
		for _, body := range b.bodies {
			mix = append(mix, request{url: ep.url(), payload: ep.payload(body)})
		}
	}
	check := b.endpoint(epValidate).check
	client := newClient(o.openWorkers)
	defer client.CloseIdleConnections()
	var worker atomic.Int64
	newCaller := func() *caller {
		i := int(worker.Add(1))
		return &caller{client: client, check: check, mix: mix, next: i * 7}
	}

	fmt.Printf("measuring its throughput (closed loop, %d connections, %v) …\n", o.matrixConcurrency, soakCapacityTime)
	closedLoop(ctx, newCaller, o.matrixConcurrency, o.warmup)
	capacity := closedLoop(ctx, newCaller, o.matrixConcurrency, soakCapacityTime)
	if capacity.errors > 0 {
		return fmt.Errorf("%d of %d requests failed while measuring the throughput: %v", capacity.errors, capacity.requests(), capacity.firstError)
	}
	rps := float64(capacity.requests()) / capacity.elapsed.Seconds()
	rate := soakFraction * rps
	fmt.Printf("throughput %.0f requests/s; soaking at %.0f%% of it, %.0f requests/s, for %v (%d kinds of request)\n",
		rps, 100*soakFraction, rate, d, len(mix))

	var windows []soakWindowResult
	start := time.Now()
	for elapsed := time.Duration(0); elapsed < d; elapsed = time.Since(start) {
		w := min(soakWindow, d-elapsed)
		r := openLoop(ctx, newCaller, rate, w, o.openWorkers)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.alive(); err != nil {
			return err
		}
		m, err := readMemory(guard.proc.pid())
		if err != nil {
			return err
		}
		res := soakWindowResult{at: time.Since(start), requests: r.requests(), errors: r.errors,
			p99: summarize(r.latencies).P99, rss: m.RSS}
		windows = append(windows, res)
		fmt.Printf("  %8v  %7d requests  %d failed  p99 %-9s  RSS %6.1f MiB\n",
			res.at.Round(time.Second), res.requests, res.errors, ms(res.p99), mib(res.rss))
		if r.firstError != nil {
			fmt.Fprintln(os.Stderr, "  first error:", r.firstError)
		}
	}
	return soakVerdict(windows, idle, rps, rate, d)
}

// prepareSoak is prepare without OPA, which the soak does not run.
func (b *bench) prepareSoak(ctx context.Context) error {
	opa := b.o.opa
	b.o.opa = b.o.kueueGuard
	defer func() { b.o.opa = opa }()
	return b.prepare(ctx)
}

// soakVerdict prints the summary and fails on a failed request or a resident
// set that grew.
func soakVerdict(windows []soakWindowResult, idle memory, rps, rate float64, d time.Duration) error {
	if len(windows) == 0 {
		return errors.New("the soak ran no window")
	}
	var sent, failed int
	var peak uint64
	for _, w := range windows {
		sent += w.requests
		failed += w.errors
		peak = max(peak, w.rss)
	}
	base := windows[(len(windows)-1)/4].rss
	last := windows[len(windows)-1].rss
	growth := float64(last) / float64(base)
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %v at %.0f requests/s (%.0f%% of the %.0f measured); %d requests, %d failed; "+
		"RSS idle %.1f MiB, after the first quarter %.1f MiB, at the end %.1f MiB (×%.2f), peak %.1f MiB",
		d, rate, 100*soakFraction, rps, sent, failed, mib(idle.RSS), mib(base), mib(last), growth, mib(peak))
	fmt.Println(b.String())
	var errs []error
	if failed > 0 {
		errs = append(errs, fmt.Errorf("%d requests failed", failed))
	}
	if growth > soakGrowth {
		errs = append(errs, fmt.Errorf("the resident set grew ×%.2f after the first quarter (at most ×%.2f)", growth, soakGrowth))
	}
	return errors.Join(errs...)
}
