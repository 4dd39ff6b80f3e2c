package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kueue-guard/kueue-guard/pkg/schedsim"
)

// SimulationKind is the JSON report's kind for `kueue-guard simulate`: a
// review report whose allowed workloads carry a simulation.
const SimulationKind = "Simulation"

// Exit codes of `kueue-guard simulate`, besides ExitInputError (2, could not
// read): 0 every workload would be admitted now, 1 one is denied or would
// never be admitted, 3 one would wait.
const (
	ExitAdmittedNow = 0
	ExitNeverOrDeny = 1
	ExitWouldWait   = 3
)

// Results of a whole simulation, worst first after ResultError and
// ResultDenied.
const (
	ResultNever = "never"
	ResultWait  = "wait"
	ResultNow   = "now"
)

// simulateFlags are the review flags simulate takes (text and JSON output;
// no explain, mutations or fail-on-warn: the verdict is Kueue's).
var simulateFlags = []string{"filename", "policies", "config", "cluster-state", "live-cluster", "kubeconfig", "context",
	"cluster", "user", "output", "as", "as-group", "namespace", "kueue-guard-namespace", "no-color"}

// SimulateCLI is `kueue-guard simulate`: the review of each manifest (the
// webhook's verdict), then Kueue's on each allowed workload (schedsim).
type SimulateCLI struct{ CLI }

// AddFlags registers simulate's flags.
func (c *SimulateCLI) AddFlags(fs *pflag.FlagSet) {
	all := pflag.NewFlagSet("review", pflag.ContinueOnError)
	c.CLI.AddFlags(all)
	for _, name := range simulateFlags {
		fs.AddFlag(all.Lookup(name))
	}
	fs.Lookup("output").Usage = "Output format: " + FormatText + ", " + FormatJSON
	fs.Lookup("cluster-state").Usage = "YAML of the cluster the manifests go to, as for review, with its Workloads " +
		"(Kueue's usage and queues) and PriorityClasses"
}

// Run simulates the manifests and writes the report to stdout; it returns
// the exit code and, for a non-zero one, an error that says why in a line.
func (c *SimulateCLI) Run(ctx context.Context, fs *pflag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fail := func(err error) (int, error) {
		fmt.Fprintf(stderr, "kueue-guard simulate: %v\n", err)
		return ExitInputError, err
	}
	if c.Output != FormatText && c.Output != FormatJSON {
		return fail(&UsageError{Err: fmt.Errorf("--output %q: use %s or %s", c.Output, FormatText, FormatJSON)})
	}
	if c.ClusterState == "" && !c.LiveCluster {
		return fail(&UsageError{Err: errors.New("simulate needs the cluster: give --cluster-state FILE or --live-cluster")})
	}
	o, manifests, readErrs, err := c.prepare(ctx, fs, args, stdin, true)
	if err != nil {
		return fail(err)
	}
	o.Simulate = true
	rep, err := Review(ctx, o, manifests, readErrs)
	if err != nil {
		return fail(err)
	}
	rep.Kind = SimulationKind
	rep.Result, rep.ExitCode = simulationResult(rep)
	if c.Output == FormatJSON {
		err = Render(stdout, rep, FormatJSON, RenderOptions{})
	} else {
		err = renderSimulation(stdout, rep)
	}
	if err != nil {
		return fail(fmt.Errorf("writing the report: %w", err))
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(stderr, "kueue-guard simulate: %v\n", e)
	}
	if rep.ExitCode != ExitAdmittedNow {
		return rep.ExitCode, fmt.Errorf("result: %s", rep.Result)
	}
	return ExitAdmittedNow, nil
}

// simulationResult is the worst outcome and its exit code: could not read,
// then denied or never, then wait, then now.
func simulationResult(rep *Report) (string, int) {
	if rep.Summary.InputErrors+rep.Summary.Errors > 0 {
		return ResultError, ExitInputError
	}
	verdicts := map[schedsim.Verdict]bool{}
	for _, o := range rep.Objects {
		if o.Simulation != nil {
			verdicts[o.Simulation.Verdict] = true
		}
	}
	switch {
	case rep.Summary.Denied > 0:
		return ResultDenied, ExitNeverOrDeny
	case verdicts[schedsim.Never]:
		return ResultNever, ExitNeverOrDeny
	case verdicts[schedsim.Wait]:
		return ResultWait, ExitWouldWait
	}
	return ResultNow, ExitAdmittedNow
}

// renderSimulation writes the text report: per object, the webhook's
// verdict, then Kueue's.
func renderSimulation(w io.Writer, rep *Report) error {
	var b strings.Builder
	for _, o := range rep.Objects {
		if o.Status == StatusClusterState || o.Status == StatusSkipped {
			continue
		}
		fmt.Fprintf(&b, "%s (%s): %s\n", o.Ref(), o.Source, o.Status)
		if o.Reason != "" {
			fmt.Fprintf(&b, "  %s\n", o.Reason)
		}
		for _, f := range o.Findings {
			fmt.Fprintf(&b, "  %s %s: %s\n", f.Enforcement, f.Rule, f.Message)
		}
		for _, n := range o.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		if s := o.Simulation; s != nil {
			writeSimulation(&b, s)
		}
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(&b, "error: %v\n", e)
	}
	fmt.Fprintf(&b, "Result: %s\n", rep.Result)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSimulation(b *strings.Builder, s *Simulation) {
	verdict := map[schedsim.Verdict]string{schedsim.Now: "admitted now", schedsim.Wait: "would wait", schedsim.Never: "never admitted"}[s.Verdict]
	fmt.Fprintf(b, "  Kueue: %s", verdict)
	if s.ClusterQueue != "" {
		fmt.Fprintf(b, " in ClusterQueue %s (LocalQueue %s)", s.ClusterQueue, s.LocalQueue)
	}
	if s.Of != "" {
		fmt.Fprintf(b, ", %s at a time", s.Of)
	}
	b.WriteString("\n")
	switch {
	case s.Reason != "" && s.Message != "":
		fmt.Fprintf(b, "    %s: %s\n", s.Reason, s.Message)
	case s.Reason != "" || s.Message != "":
		fmt.Fprintf(b, "    %s%s\n", s.Reason, s.Message)
	}
	for _, m := range s.Missing {
		fmt.Fprintf(b, "    missing: %s of flavor %s: needs %s, %s available\n", m.Resource, m.Flavor, m.Requested, m.Available)
	}
	if a := s.Ahead; a != nil && a.ClusterQueue > 0 {
		fmt.Fprintf(b, "    ahead: %d pending in ClusterQueue %s (%d in LocalQueue %s)", a.ClusterQueue, s.ClusterQueue, a.LocalQueue, s.LocalQueue)
		if a.Blocking > 0 {
			b.WriteString(", blocking it (StrictFIFO)")
		} else {
			b.WriteString(", not blocking it (BestEffortFIFO)")
		}
		b.WriteString("\n")
	}
	when := "flavors"
	if s.Verdict == schedsim.Wait {
		when = "flavors once quota frees"
	}
	for _, ps := range s.PodSets {
		var fl []string
		for _, r := range slices.Sorted(maps.Keys(ps.Flavors)) {
			fl = append(fl, r+" → "+ps.Flavors[r])
		}
		fmt.Fprintf(b, "    %s: pod set %s ×%d: %s\n", when, ps.Name, ps.Count, strings.Join(fl, ", "))
	}
	if s.Borrows {
		b.WriteString("    borrows from its cohort\n")
	}
	for _, v := range s.Preempts {
		fmt.Fprintf(b, "    preempts: %s/%s in ClusterQueue %s (%s)\n", v.Namespace, v.Name, v.ClusterQueue, v.Reason)
	}
}
