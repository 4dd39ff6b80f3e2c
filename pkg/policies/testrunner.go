package policies

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// TestOptions tune RunTests.
type TestOptions struct {
	// Run, when set, is a regular expression selecting the tests to run by
	// their full name (data.pkg.test_name), as opa test --run.
	Run string
	// Timeout bounds each test; default 5s.
	Timeout time.Duration
	// Verbose prints print() output of passing tests too.
	Verbose bool
}

// RunTests runs the Rego tests (rules named test_*) under dir, the policies and
// their _test.rego files together with the data files, compiled with the same
// capabilities and strict built-in errors as the server uses, so a test cannot
// pass on a built-in the server refuses. It prints one PASS/FAIL/ERROR line per
// test in opa test's style, with the file and line of every failure, then a
// summary. passed is false when a test failed or errored, or when there is no
// test; err is for directories that cannot be read or compiled.
func RunTests(ctx context.Context, dir string, w io.Writer, o TestOptions) (passed bool, err error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	snap, err := readSnapshot(dir, true)
	if err != nil {
		return false, err
	}
	modules, store, err := parseSnapshot(dir, snap)
	if err != nil {
		return false, err
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return false, err
	}
	defer store.Abort(ctx, txn)

	// The tester adds its own stages to the compiler and compiles the modules.
	compiler := newCompiler(Capabilities(), true).WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn))
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetModules(modules).
		SetDefaultRegoVersion(regoVersion).
		RaiseBuiltinErrors(true).
		CapturePrintOutput(true).
		EnableTracing(true).
		SetTimeout(o.Timeout).
		Filter(o.Run)
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return false, &LoadError{Dir: dir, Problems: problems(dir, err)}
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b *tester.Result) int {
		if c := strings.Compare(locFile(a), locFile(b)); c != 0 {
			return c
		}
		if c := locRow(a) - locRow(b); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return report(w, dir, results, o.Verbose), nil
}

// failureLocation finds the expression that made a test fail, the way opa test
// --failure-line does: the last failed expression of the test's queries,
// skipping "every" (its failing body expression comes first).
func failureLocation(trace []*topdown.Event) *ast.Location {
	for _, e := range slices.Backward(trace) {
		if e.Op != topdown.FailOp || e.Location == nil || e.QueryID == 0 {
			continue
		}
		if expr, ok := e.Node.(*ast.Expr); ok {
			if _, every := expr.Terms.(*ast.Every); every {
				continue
			}
		}
		return e.Location
	}
	return nil
}

func oneLine(s string) string { return truncate(strings.Join(strings.Fields(s), " "), 160) }

func locFile(r *tester.Result) string {
	if r.Location == nil {
		return ""
	}
	return r.Location.File
}

func locRow(r *tester.Result) int {
	if r.Location == nil {
		return 0
	}
	return r.Location.Row
}

// report prints results like opa test: "data.pkg.test_x: PASS (1.2ms)", failures
// preceded by their location, then "PASS: n/n" or "FAIL: k/n".
func report(w io.Writer, dir string, results []*tester.Result, verbose bool) bool {
	var pass, fail, errs, skip int
	for _, r := range results {
		name := r.Package + "." + r.Name
		switch {
		case r.Skip:
			skip++
			fmt.Fprintf(w, "%s: SKIPPED\n", name)
			continue
		case r.Error != nil:
			errs++
			fmt.Fprintf(w, "%s:%d: %s: ERROR (%s)\n  %s\n", filepath.Join(dir, locFile(r)), locRow(r), name,
				r.Duration.Round(time.Microsecond), strings.ReplaceAll(r.Error.Error(), "\n", "\n  "))
		case r.Fail:
			fail++
			fmt.Fprintf(w, "%s:%d: %s: FAIL (%s)\n", filepath.Join(dir, locFile(r)), locRow(r), name, r.Duration.Round(time.Microsecond))
			if loc := failureLocation(r.Trace); loc != nil {
				fmt.Fprintf(w, "  failed at %s:%d: %s\n", filepath.Join(dir, loc.File), loc.Row, oneLine(string(loc.Text)))
			}
		default:
			pass++
			fmt.Fprintf(w, "%s: PASS (%s)\n", name, r.Duration.Round(time.Microsecond))
		}
		if len(r.Output) > 0 && (verbose || !r.Pass()) {
			for _, line := range strings.Split(strings.TrimRight(string(r.Output), "\n"), "\n") {
				fmt.Fprintf(w, "  | %s\n", line)
			}
		}
	}
	total := len(results)
	fmt.Fprintln(w, strings.Repeat("-", 80))
	if total == 0 {
		fmt.Fprintf(w, "no tests found in %s\n", dir)
		return false
	}
	if pass > 0 {
		fmt.Fprintf(w, "PASS: %d/%d\n", pass, total)
	}
	if fail > 0 {
		fmt.Fprintf(w, "FAIL: %d/%d\n", fail, total)
	}
	if errs > 0 {
		fmt.Fprintf(w, "ERROR: %d/%d\n", errs, total)
	}
	if skip > 0 {
		fmt.Fprintf(w, "SKIPPED: %d/%d\n", skip, total)
	}
	return fail == 0 && errs == 0 && pass > 0
}
