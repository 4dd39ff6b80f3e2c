package main

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The soak (make soak): kueue-guard alone, usually built with -race, under an
// open-loop load of every body to both workload webhooks at a fraction of the
// throughput it reaches in this run, for a long time. It passes when no
// request fails (a race the detector finds exits the server) and memory is
// flat: what a leak or a race shows only over time.
const (
	// soakCapacityTime is how long the closed loop that measures the
	// server's throughput runs, at --matrix-concurrency.
	soakCapacityTime = 10 * time.Second
	// soakFraction of that throughput is the soak's rate.
	soakFraction = 0.8
	// soakWindow is how often the resident set is read (each window is one
	// open-loop run).
	soakWindow = 30 * time.Second
	// soakGrowth is how much the resident set may trend up over the last
	// three quarters of the soak (after warm-up: caches, pools, the canary
	// ring full).
	soakGrowth = 1.10
)

// soakWindowResult is one window of the soak.
type soakWindowResult struct {
	at       time.Duration
	requests int
	errors   int
	p99      time.Duration
	rss      uint64
	// heap is the Go heap the last collection found live
	// (go_gc_heap_live_bytes): unlike the heap in use, it does not breathe
	// with the collector's pace (--gc-headroom-mib lets the heap in use grow
	// that much above it between cycles).
	heap uint64
}

// runSoak runs the soak for d and prints its table; it fails on any failed
// request, on the server exiting, and on a resident set that grew more than
// soakGrowth.
func runSoak(ctx context.Context, o *options, d time.Duration) (err error) {
	b := &bench{o: o, started: time.Now()}
	if err := b.prepareSoak(ctx); err != nil {
		return err
	}
	cleanup, err := b.makeWorkDir("kueue-guard-soak-")
	if err != nil {
		return err
	}
	defer cleanup()
	defer b.stopAll()
	if err := b.startControlPlane(); err != nil {
		return err
	}
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
		heap, err := liveHeap(ctx, guard.metrics)
		if err != nil {
			return err
		}
		res := soakWindowResult{at: time.Since(start), requests: r.requests(), errors: r.errors,
			p99: summarize(r.latencies).P99, rss: m.RSS, heap: heap}
		windows = append(windows, res)
		fmt.Printf("  %8v  %7d requests  %d failed  p99 %-9s  RSS %6.1f MiB  Go heap live %6.1f MiB\n",
			res.at.Round(time.Second), res.requests, res.errors, ms(res.p99), mib(res.rss), mib(res.heap))
		if r.firstError != nil {
			fmt.Fprintln(os.Stderr, "  first error:", r.firstError)
		}
	}
	return soakVerdict(windows, idle, rps, rate, d, raceBuilt(o.kueueGuard))
}

// raceBuilt reports whether the binary was built with -race: the race
// runtime's own memory grows in a long-running program and is not the
// program's (golang/go#37233), so its resident set is reported, not judged.
func raceBuilt(binary string) bool {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// liveHeap reads go_gc_heap_live_bytes from kueue-guard's metrics.
func liveHeap(ctx context.Context, url string) (uint64, error) {
	v, err := readMetrics(ctx, url, "go_gc_heap_live_bytes")
	if err != nil {
		return 0, err
	}
	return uint64(v["go_gc_heap_live_bytes"]), nil
}

// readMetrics reads unlabelled samples from kueue-guard's metrics, by name;
// a name it does not serve is an error.
func readMetrics(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", url, name, err)
		}
		out[name] = f
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("%s has no %s", url, n)
		}
	}
	return out, nil
}

// prepareSoak is prepare without OPA, which the soak does not run, nor the
// streams, which it does not send.
func (b *bench) prepareSoak(ctx context.Context) error {
	opa, streams := b.o.opa, b.o.streamSize
	b.o.opa, b.o.streamSize = b.o.kueueGuard, 0
	defer func() { b.o.opa, b.o.streamSize = opa, streams }()
	return b.prepare(ctx)
}

// soakVerdict prints the summary and fails on a failed request, or on a Go
// heap (and, for a build without -race, a resident set) that trends up. A
// single reading is noisy (the heap breathes with each garbage collection, and
// freed pages go back to the kernel slowly), so the growth is the
// least-squares trend of the readings after the first quarter (caches, pools
// and the canary ring warm), over that span, relative to their mean.
func soakVerdict(windows []soakWindowResult, idle memory, rps, rate float64, d time.Duration, race bool) error {
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
	steady := windows[len(windows)/4:]
	rssGrowth := trend(steady, func(w soakWindowResult) uint64 { return w.rss })
	heapGrowth := trend(steady, func(w soakWindowResult) uint64 { return w.heap })
	last := windows[len(windows)-1]
	fmt.Printf("soak: %v at %.0f requests/s (%.0f%% of the %.0f measured); %d requests, %d failed\n",
		d, rate, 100*soakFraction, rps, sent, failed)
	fmt.Printf("  Go heap live: first steady reading %.1f MiB, last %.1f MiB; trend over the last three quarters %+.1f%%\n",
		mib(steady[0].heap), mib(last.heap), 100*heapGrowth)
	fmt.Printf("  RSS: idle %.1f MiB, first steady reading %.1f MiB, last %.1f MiB, peak %.1f MiB; trend %+.1f%%",
		mib(idle.RSS), mib(steady[0].rss), mib(last.rss), mib(peak), 100*rssGrowth)
	if race {
		fmt.Print(" (a -race build: the race runtime's own memory grows, and is reported, not judged)")
	}
	fmt.Println()
	var errs []error
	if failed > 0 {
		errs = append(errs, fmt.Errorf("%d requests failed", failed))
	}
	limit := soakGrowth - 1
	if heapGrowth > limit {
		errs = append(errs, fmt.Errorf("the Go heap trends up %.1f%% over the last three quarters (at most %.0f%%)", 100*heapGrowth, 100*limit))
	}
	if !race && rssGrowth > limit {
		errs = append(errs, fmt.Errorf("the resident set trends up %.1f%% over the last three quarters (at most %.0f%%)", 100*rssGrowth, 100*limit))
	}
	return errors.Join(errs...)
}

// trend is the least-squares slope of the readings' resident set over their
// time span, relative to their mean: 0.1 is a rise of a tenth of it.
func trend(ws []soakWindowResult, of func(soakWindowResult) uint64) float64 {
	if len(ws) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, w := range ws {
		x, y := w.at.Seconds(), float64(of(w))
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(ws))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	slope := (n*sxy - sx*sy) / den
	span := ws[len(ws)-1].at.Seconds() - ws[0].at.Seconds()
	return slope * span / (sy / n)
}
