package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"
)

// gcWindow is when cycle n of the collector ran, from its sweep termination to
// the end of its mark termination, in the harness's clock.
type gcWindow struct {
	n          int
	start, end time.Time
}

// gcTrace reads a Go child's GODEBUG=gctrace=1 lines as they are written to
// its log, and keeps when each cycle ran: the runtime's metrics count cycles,
// but do not say when they were. A line's "@t s" counts from the child's
// runtime start, which follows its exec by tens of milliseconds: the windows
// are set in the harness's clock by calibrate, from the end of a cycle the
// child's metrics give in wall-clock time.
type gcTrace struct {
	out   io.Writer
	start time.Time

	mu      sync.Mutex
	partial []byte
	windows []gcWindow
	offset  time.Duration
}

func newGCTrace(out io.Writer, start time.Time) *gcTrace {
	return &gcTrace{out: out, start: start}
}

// Write passes p on to the log and parses the complete lines it holds.
func (t *gcTrace) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		if w, ok := parseGCTrace(t.partial[:i], t.start); ok {
			t.windows = append(t.windows, w)
		}
		t.partial = t.partial[i+1:]
	}
	t.partial = slices.Clip(t.partial)
	t.mu.Unlock()
	return t.out.Write(p)
}

// between is the cycles that overlapped [from, to].
func (t *gcTrace) between(from, to time.Time) []gcWindow {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []gcWindow
	for _, w := range t.windows {
		w.start, w.end = w.start.Add(t.offset), w.end.Add(t.offset)
		if w.end.After(from) && w.start.Before(to) {
			out = append(out, w)
		}
	}
	return out
}

// calibrate sets the windows in the harness's clock from cycle n's end as the
// child reports it (Go's MemStats.LastGC, which its metrics export), once the
// line of cycle n has been read; ok is false if it has not yet.
func (t *gcTrace) calibrate(n int, end time.Time) (ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range slices.Backward(t.windows) {
		if w.n == n {
			t.offset = end.Sub(w.end)
			return true
		}
	}
	return false
}

// calibrateWithin calls calibrate until it succeeds or d has passed: a cycle's
// line reaches the harness through a pipe, after the cycle is counted.
func (t *gcTrace) calibrateWithin(n int, end time.Time, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if t.calibrate(n, end) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// gcTraceLine is the start of a gctrace line: the cycle's start ("@t s") and
// its three phases' wall-clock milliseconds (sweep termination, concurrent
// mark, mark termination).
var gcTraceLine = regexp.MustCompile(`^gc (\d+) @([0-9.]+)s \d+%[^:]*: ([0-9.]+)\+([0-9.]+)\+([0-9.]+) ms clock`)

func parseGCTrace(line []byte, start time.Time) (gcWindow, bool) {
	m := gcTraceLine.FindSubmatch(line)
	if m == nil {
		return gcWindow{}, false
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return gcWindow{}, false
	}
	var f [4]float64
	for i := range f {
		v, err := strconv.ParseFloat(string(m[i+2]), 64)
		if err != nil {
			return gcWindow{}, false
		}
		f[i] = v
	}
	from := start.Add(time.Duration(f[0] * float64(time.Second)))
	return gcWindow{n: n, start: from, end: from.Add(time.Duration((f[1] + f[2] + f[3]) * float64(time.Millisecond)))}, true
}

// gcSlack widens each cycle's window on both sides: the trace gives its
// times to the millisecond.
const gcSlack = time.Millisecond

// tailInGC is how an open-loop point's slowest requests (latency at or above
// its p99) fell beside the collector's cycles: how many overlapped one, of how
// many, and the share of the point's time the cycles covered. Each request
// spans [sent, sent+latency].
type tailInGC struct {
	InCycles, Tail int
	TimeShare      float64
}

func tailOverlap(sent []time.Time, lat []time.Duration, p99 time.Duration, cycles []gcWindow) tailInGC {
	from, to := requestSpan(sent, lat)
	var out tailInGC
	for i, s := range sent {
		if lat[i] < p99 {
			continue
		}
		end := s.Add(lat[i])
		out.Tail++
		for _, w := range cycles {
			if s.Before(w.end.Add(gcSlack)) && end.After(w.start.Add(-gcSlack)) {
				out.InCycles++
				break
			}
		}
	}
	var covered time.Duration
	for _, w := range cycles {
		a, b := maxTime(w.start.Add(-gcSlack), from), minTime(w.end.Add(gcSlack), to)
		if b.After(a) {
			covered += b.Sub(a)
		}
	}
	if span := to.Sub(from); span > 0 {
		out.TimeShare = min(1, float64(covered)/float64(span))
	}
	return out
}

// requestSpan is from the first request's send to the last one's answer.
func requestSpan(sent []time.Time, lat []time.Duration) (from, to time.Time) {
	for i, s := range sent {
		if end := s.Add(lat[i]); i == 0 || end.After(to) {
			to = end
		}
		if i == 0 || s.Before(from) {
			from = s
		}
	}
	return from, to
}

// gcTailCell renders how a point's p99 tail fell in the collector's cycles:
// "77/112 (6.6%)", or "–" without a trace.
func gcTailCell(g *gcDelta) string {
	if g == nil || g.Tail == nil {
		return "–"
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", g.Tail.InCycles, g.Tail.Tail, 100*g.Tail.TimeShare)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
