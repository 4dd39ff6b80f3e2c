package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// benchPackages are the packages whose benchmarks measure one request's work
// without the network: one AdmissionReview through the server's handler
// (pkg/handlers), the whole pipeline (pkg/admission) and the policy step
// (pkg/policies).
var benchPackages = []string{"./pkg/handlers/", "./pkg/admission/", "./pkg/policies/"}

// goBenchmark is one line of `go test -bench` output.
type goBenchmark struct {
	Package string
	// Name is without the -GOMAXPROCS suffix.
	Name string
	// Metrics are the line's figures by unit: ns/op, B/op, allocs/op and any
	// custom ones (the median of Runs runs).
	Metrics map[string]float64
	Runs    int
}

// runGoBenchmarks runs the benchmarks of packages matching pattern count
// times each, with allocation counts, and parses whatever Benchmark lines come
// out (the benchmarks are the packages' to name): each benchmark's figures are
// the median of its runs.
func runGoBenchmarks(ctx context.Context, pattern, benchtime string, count int, packages ...string) ([]goBenchmark, error) {
	args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem", "-benchtime=" + benchtime,
		"-count=" + strconv.Itoa(count)}, packages...)
	cmd := exec.CommandContext(ctx, goCommand(), args...)
	// Interrupted, go test stops the test binary it runs; killed, it would not.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	results := medians(parseGoBenchmarks(stdout.String()))
	if err != nil {
		return results, fmt.Errorf("go %s: %w\n%s%s", strings.Join(args, " "), err, tailLines(stdout.String(), 10), stderr.String())
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("go %s printed no benchmark", strings.Join(args, " "))
	}
	return results, nil
}

// goCommand is $GO, as the Makefile calls it, or go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseGoBenchmarks reads the benchmark lines of `go test -bench` output:
// "BenchmarkX-2  1000  1234 ns/op  56 B/op  7 allocs/op", each after the "pkg:"
// line of its package.
func parseGoBenchmarks(out string) []goBenchmark {
	var results []goBenchmark
	pkg := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			continue
		}
		b := goBenchmark{Package: pkg, Name: procsSuffix.ReplaceAllString(fields[0], ""), Metrics: map[string]float64{}}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			b.Metrics[fields[i+1]] = v
		}
		results = append(results, b)
	}
	return results
}

// medians merges the runs of each benchmark (in the order of their first run)
// into one, each metric the median of its runs: on a shared machine one slow
// second moves a single run's ns/op by a third.
func medians(runs []goBenchmark) []goBenchmark {
	var order []string
	byName := map[string][]goBenchmark{}
	for _, b := range runs {
		key := b.Package + " " + b.Name
		if _, ok := byName[key]; !ok {
			order = append(order, key)
		}
		byName[key] = append(byName[key], b)
	}
	out := make([]goBenchmark, 0, len(order))
	for _, key := range order {
		same := byName[key]
		m := goBenchmark{Package: same[0].Package, Name: same[0].Name, Runs: len(same), Metrics: map[string]float64{}}
		for unit := range same[0].Metrics {
			var vs []float64
			for _, b := range same {
				if v, ok := b.Metrics[unit]; ok {
					vs = append(vs, v)
				}
			}
			m.Metrics[unit] = median(vs)
		}
		out = append(out, m)
	}
	return out
}

// median of vs (the mean of the middle two for an even count); vs is sorted.
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
