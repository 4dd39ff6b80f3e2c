package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// requestTimeout bounds one request; a slower answer is an error.
const requestTimeout = 10 * time.Second

// newClient is the one client every target is driven with: HTTP/1.1 over TLS 1.2
// or later with keep-alive, conns connections kept open. Certificates are not
// verified: they are the harness's own, thrown away at exit; what is measured
// here is latency, not trust.
func newClient(conns int) *http.Client {
	return &http.Client{Timeout: requestTimeout, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // throwaway certificate
		ForceAttemptHTTP2:   false,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// checkLoopback refuses any URL whose host is not a loopback IP address: this
// harness never sends traffic off the machine.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to send load to %s: not a loopback address", u.Host)
	}
	return nil
}

// caller sends one payload to one URL and checks each answer. Each worker has its
// own, so that its buffer is reused without locking.
type caller struct {
	client  *http.Client
	url     string
	payload []byte
	check   func([]byte) error
	buf     bytes.Buffer
	// mix, when not empty, replaces url and payload: each call sends the
	// next of them, in turn.
	mix  []request
	next int
	// stream, when not empty, replaces payload: each call sends the one
	// cursor, shared by the point's workers, points at, and moves it on. An
	// atomic add, not a lock: the workers would queue on a lock.
	stream [][]byte
	cursor *atomic.Uint64
	// marks are the stream's pass digits (passes.go), nil for OPA's inputs;
	// patched holds the request a later pass sends.
	marks   [][]int
	patched []byte
}

// request is one URL and the payload sent to it.
type request struct {
	url     string
	payload []byte
}

// call sends the payload once. An error is a transport failure, a status other
// than 200, or an answer the target's check refuses (undecodable, or missing its
// response).
func (c *caller) call(ctx context.Context) error {
	url, payload := c.url, c.payload
	switch {
	case len(c.stream) > 0:
		n, size := c.cursor.Add(1)-1, uint64(len(c.stream))
		payload = c.stream[n%size]
		if pass := n / size; pass > 0 && c.marks != nil && len(c.marks[n%size]) > 0 {
			c.patched = passVariant(c.patched, payload, c.marks[n%size], pass)
			payload = c.patched
		}
	case len(c.mix) > 0:
		r := c.mix[c.next%len(c.mix)]
		c.next++
		url, payload = r.url, r.payload
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := io.Copy(&c.buf, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, truncate(c.buf.String(), 200))
	}
	return c.check(c.buf.Bytes())
}

// loopRun is what one load loop observed.
type loopRun struct {
	latencies []time.Duration
	errors    int
	// firstError is kept to tell what the errors were.
	firstError error
	elapsed    time.Duration
}

// add merges another run's observations into r; elapsed times add up, as for
// the repetitions of one point.
func (r *loopRun) add(o loopRun) {
	r.latencies = append(r.latencies, o.latencies...)
	r.errors += o.errors
	if r.firstError == nil {
		r.firstError = o.firstError
	}
	r.elapsed += o.elapsed
}

// requests is how many requests completed, failed ones included.
func (r *loopRun) requests() int { return len(r.latencies) }

// closedLoop runs c workers that each send a request as soon as their previous
// one is answered, for d. Latency is from send to answer.
func closedLoop(ctx context.Context, newCaller func() *caller, c int, d time.Duration) loopRun {
	ctx, cancel := context.WithTimeout(ctx, d+requestTimeout)
	defer cancel()
	start := time.Now()
	deadline := start.Add(d)
	runs := make([]loopRun, c)
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			cl, r := newCaller(), &runs[w]
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t := time.Now()
				err := cl.call(ctx)
				r.latencies = append(r.latencies, time.Since(t))
				r.count(err)
			}
		})
	}
	wg.Wait()
	var total loopRun
	for _, r := range runs {
		total.add(r)
	}
	total.elapsed = time.Since(start)
	return total
}

func (r *loopRun) count(err error) {
	if err != nil {
		r.errors++
		if r.firstError == nil {
			r.firstError = err
		}
	}
}

// openRun is what an open loop observed, and how many requests had to wait for a
// free worker (sent after their scheduled time).
type openRun struct {
	loopRun
	queued int
	// sent is when each request's latency (of latencies, in the same order)
	// is timed from: when it was due, or sent if its worker slept past that.
	sent []time.Time
}

// openLoop sends requests on a fixed timeline, rate per second for d, from up to
// workers concurrent requests. Latency is from each request's scheduled send
// time, so a slow answer delays the requests behind it and they are counted
// with the wait (no coordinated omission). One exception: a worker that was idle
// sleeps until the scheduled time, and Go's timers wake up to a millisecond late;
// that delay is the harness's, not the server's, so such a request is timed from
// when it was actually sent.
func openLoop(ctx context.Context, newCaller func() *caller, rate float64, d time.Duration, workers int) openRun {
	interval := time.Duration(float64(time.Second) / rate)
	n := int64(d / interval)
	ctx, cancel := context.WithTimeout(ctx, d+requestTimeout)
	defer cancel()
	start := time.Now().Add(10 * time.Millisecond)
	var next atomic.Int64
	runs := make([]openRun, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			cl, r := newCaller(), &runs[w]
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				scheduled := start.Add(time.Duration(i) * interval)
				from := scheduled
				if wait := time.Until(scheduled); wait > 0 {
					time.Sleep(wait)
					from = time.Now()
				} else {
					r.queued++
				}
				err := cl.call(ctx)
				r.latencies = append(r.latencies, time.Since(from))
				r.sent = append(r.sent, from)
				r.count(err)
			}
		})
	}
	wg.Wait()
	var total openRun
	for _, r := range runs {
		total.add(r.loopRun)
		total.queued += r.queued
		total.sent = append(total.sent, r.sent...)
	}
	total.elapsed = time.Since(start)
	return total
}

// withHarnessGCHeld runs a measured window with the harness's own garbage
// collector held off, after a collection. The harness holds every stream's
// requests (some 600 MB), and a mark of that heap takes one of the machine's
// two cores for 30-50 ms every few seconds (GODEBUG=gctrace=1): inside a
// window it delays the client's sends, and the in-process floor's answers, by
// as much, so that an open-loop point's p99 said whether the harness
// collected during it. A memory limit 2 GiB above the live heap lets the
// collector run should a window allocate that much.
func withHarnessGCHeld(f func()) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := debug.SetMemoryLimit(int64(ms.HeapAlloc) + 2<<30)
	percent := debug.SetGCPercent(-1)
	defer func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}()
	f()
}

// latency is the distribution of a point's latencies.
type latency struct {
	P50, P90, P99, Max time.Duration
}

// summarize computes nearest-rank percentiles.
func summarize(lat []time.Duration) latency {
	if len(lat) == 0 {
		return latency{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return latency{P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: s[len(s)-1]}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
