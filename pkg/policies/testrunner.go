package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Report formats of RunTests, named as opa test's --format.
const (
	// TestFormatPretty is opa test's human-readable report (tester.PrettyReporter).
	TestFormatPretty = "pretty"
	// TestFormatJSON is opa test --format json: the results as a JSON array
	// (tester.JSONReporter).
	TestFormatJSON = "json"
)

// TestOptions tune RunTests.
type TestOptions struct {
	// Run, when set, is a regular expression selecting the tests to run by
	// their full name (data.pkg.test_name), as opa test --run.
	Run string
	// Timeout bounds each test; default 5s.
	Timeout time.Duration
	// Verbose lists every test, not only the failing ones, with its print()
	// output, and traces the failing ones, as opa test --verbose.
	Verbose bool
	// Format is TestFormatPretty (the default) or TestFormatJSON.
	Format string
	// Coverage measures which lines of the policies the tests evaluate (the
	// _test.rego files themselves are not counted). The pretty report ends with
	// each file's coverage and the lines no test reached; the json format prints
	// OPA's coverage report (opa test --coverage) instead of the results when
	// every test passes. OPA's tester cannot trace while it measures coverage, so
	// failures are reported without the line that failed.
	Coverage bool
	// AllowBuiltins are the opted-in built-ins (policies.allowBuiltins), as the
	// server offers them.
	AllowBuiltins []string
}

// RunTests runs the Rego tests (rules named test_*) under dir, the policies and
// their _test.rego files together with the data files, compiled with the same
// capabilities, strict built-in errors and input schema as the server uses, so
// a test cannot pass on a built-in the server refuses, nor a policy annotated
// with the schema read a field the server never sends. OPA's own reporters
// write the report, so it reads as opa test's: the failing tests with their
// file and line and the expression that failed, then "PASS: n/m", "FAIL: k/m",
// ... passed is false when a test failed or errored, or when there is no test;
// err is for directories that cannot be read or compiled, and for bad options.
func RunTests(ctx context.Context, dir string, w io.Writer, o TestOptions) (passed bool, err error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	switch o.Format {
	case "":
		o.Format = TestFormatPretty
	case TestFormatPretty, TestFormatJSON:
	default:
		return false, fmt.Errorf("unknown test report format %q: want %s or %s", o.Format, TestFormatPretty, TestFormatJSON)
	}
	snap, err := readSnapshot(dir, true)
	if err != nil {
		return false, err
	}
	caps, err := Capabilities(o.AllowBuiltins...)
	if err != nil {
		return false, err
	}
	modules, store, err := parseSnapshot(dir, snap, caps)
	if err != nil {
		return false, err
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return false, err
	}
	defer store.Abort(ctx, txn)

	// The tester adds its own stages to the compiler and compiles the modules.
	compiler := newCompiler(caps, true).WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn))
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetModules(modules).
		SetDefaultRegoVersion(regoVersion).
		RaiseBuiltinErrors(true).
		CapturePrintOutput(true).
		SetTimeout(o.Timeout).
		Filter(o.Run)
	var cov *cover.Cover
	switch {
	case o.Coverage:
		cov = cover.New()
		runner.SetCoverageQueryTracer(cov)
	case o.Format == TestFormatPretty:
		// The trace gives the failing expression (and, verbose, the whole
		// evaluation) of a failed test.
		runner.EnableTracing(true)
	}
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return false, &LoadError{Dir: dir, Problems: problems(dir, err)}
	}
	results := collectResults(ch, dir)
	// The server refuses a set whose METADATA it cannot honour (an unknown
	// enforcement, a custom.match it cannot apply): so does the test run.
	if _, err := discover(dir, &compiled{compiler: compiler, store: store, modules: modules}); err != nil {
		return false, err
	}
	passed = allPassed(results)

	var coverage *cover.Report
	if cov != nil {
		coverage = coverageReport(cov, dir, modules)
	}
	switch {
	case o.Format == TestFormatJSON && coverage != nil && passed:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(coverage)
	case o.Format == TestFormatJSON:
		err = tester.JSONReporter{Output: w}.Report(resultChannel(results))
	default:
		err = tester.PrettyReporter{Output: w, Verbose: o.Verbose, FailureLine: true}.Report(resultChannel(results))
		if err == nil && len(results) == 0 {
			_, err = fmt.Fprintf(w, "no tests found in %s\n", dir)
		}
		if err == nil && coverage != nil {
			err = printCoverage(w, coverage)
		}
	}
	if err != nil {
		return false, fmt.Errorf("writing the test report: %w", err)
	}
	return passed, nil
}

// collectResults waits for every result and orders them by file and line, so
// that the report reads in source order whatever order the tests ran in. The
// file names the tester knows are relative to dir; the results are given dir's
// path (on copies of the locations: the originals belong to the compiled
// modules), so that the report names files a user can open.
func collectResults(ch chan *tester.Result, dir string) []*tester.Result {
	var results []*tester.Result
	for r := range ch {
		r.Location = underDir(dir, r.Location)
		if r.Pass() {
			// Only failures are traced in a report.
			r.Trace = nil
		}
		for _, e := range r.Trace {
			e.Location = underDir(dir, e.Location)
		}
		if te, ok := errors.AsType[*topdown.Error](r.Error); ok {
			te.Location = underDir(dir, te.Location)
		}
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b *tester.Result) int {
		if c := strings.Compare(locFile(a.Location), locFile(b.Location)); c != 0 {
			return c
		}
		if c := locRow(a.Location) - locRow(b.Location); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return results
}

func underDir(dir string, loc *ast.Location) *ast.Location {
	if loc == nil || loc.File == "" {
		return loc
	}
	c := *loc
	c.File = filepath.Join(dir, loc.File)
	return &c
}

func locFile(l *ast.Location) string {
	if l == nil {
		return ""
	}
	return l.File
}

func locRow(l *ast.Location) int {
	if l == nil {
		return 0
	}
	return l.Row
}

// allPassed is true when there is a test and none failed or errored (skipped
// tests neither pass nor fail).
func allPassed(results []*tester.Result) bool {
	pass := 0
	for _, r := range results {
		switch {
		case r.Skip:
		case r.Pass():
			pass++
		default:
			return false
		}
	}
	return pass > 0
}

// resultChannel feeds collected results to a reporter.
func resultChannel(results []*tester.Result) chan *tester.Result {
	ch := make(chan *tester.Result, len(results))
	for _, r := range results {
		ch <- r
	}
	close(ch)
	return ch
}

// isTestFile reports whether a file holds tests rather than policies: the
// files a load does not read.
func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// coverageReport is OPA's coverage report of the policy files, keyed by their
// path under dir. The test files are left out, and the totals counted again
// without them: a test always covers itself, which would only inflate the
// figure.
func coverageReport(cov *cover.Cover, dir string, modules map[string]*ast.Module) *cover.Report {
	policies := maps.Clone(modules)
	maps.DeleteFunc(policies, func(name string, _ *ast.Module) bool { return isTestFile(name) })
	full := cov.Report(policies)
	out := &cover.Report{Files: map[string]*cover.FileReport{}}
	for name, fr := range full.Files {
		if isTestFile(name) {
			continue
		}
		out.Files[filepath.Join(dir, name)] = fr
		out.CoveredLines += fr.CoveredLines
		out.NotCoveredLines += fr.NotCoveredLines
	}
	if total := out.CoveredLines + out.NotCoveredLines; total > 0 {
		out.Coverage = 100 * float64(out.CoveredLines) / float64(total)
	}
	return out
}

// printCoverage ends the pretty report with the coverage of each policy file and
// the lines no test evaluated.
func printCoverage(w io.Writer, r *cover.Report) error {
	var b strings.Builder
	b.WriteString(strings.Repeat("-", 80) + "\n")
	fmt.Fprintf(&b, "COVERAGE: %.2f%% (%d of %d lines)\n", r.Coverage, r.CoveredLines, r.CoveredLines+r.NotCoveredLines)
	for _, name := range slices.Sorted(maps.Keys(r.Files)) {
		fr := r.Files[name]
		fmt.Fprintf(&b, "  %s: %.2f%%", name, fr.Coverage)
		if rows := lineRanges(fr.NotCovered); rows != "" {
			fmt.Fprintf(&b, " (not covered: %s)", rows)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lineRanges renders the lines of coverage ranges (which OPA reports per
// expression, several on a line) as "3, 7-9".
func lineRanges(ranges []cover.Range) string {
	var rows []int
	for _, r := range ranges {
		for row := r.Start.Row; row <= max(r.Start.Row, r.End.Row); row++ {
			rows = append(rows, row)
		}
	}
	slices.Sort(rows)
	rows = slices.Compact(rows)
	var parts []string
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && rows[j+1] == rows[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(rows[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", rows[i], rows[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
