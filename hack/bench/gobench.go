package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
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
	// custom ones.
	Metrics map[string]float64
}

// runGoBenchmarks runs the package benchmarks matching pattern, with allocation
// counts, and parses whatever Benchmark lines come out: the benchmarks are the
// packages' to name.
func runGoBenchmarks(ctx context.Context, pattern, benchtime string) ([]goBenchmark, error) {
	args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem", "-benchtime=" + benchtime}, benchPackages...)
	cmd := exec.CommandContext(ctx, goCommand(), args...)
	// Interrupted, go test stops the test binary it runs; killed, it would not.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	results := parseGoBenchmarks(stdout.String())
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

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
