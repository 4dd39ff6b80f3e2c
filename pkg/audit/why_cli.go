package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// WhyCLI is `kueue-guard why`: for an existing workload (or every pending
// one of a namespace), Kueue's account joined with simulate's and the
// audit's.
type WhyCLI struct {
	Kube         *genericclioptions.ConfigFlags
	Namespace    string
	All          bool
	ConfigFile   string
	PolicyDir    string
	Output       string
	OwnNamespace string

	policiesSet bool
}

// AddFlags registers the flags.
func (c *WhyCLI) AddFlags(fs *pflag.FlagSet) {
	if c.Kube == nil {
		c.Kube = review.NewKubeFlags()
	}
	c.Kube.AddFlags(fs)
	fs.StringVarP(&c.Namespace, "namespace", "n", "", "With --all, the namespace whose pending workloads are explained")
	fs.BoolVar(&c.All, "all", false, "Explain every pending workload of the namespace -n names")
	fs.StringVar(&c.ConfigFile, "config", "", "kueue-guard configuration file (default: the built-in defaults)")
	fs.StringVar(&c.PolicyDir, "policies", "", "Rego policy directory (default: the policies.directory the --config file names, else none)")
	fs.StringVarP(&c.Output, "output", "o", review.FormatText, "Output format: text, json")
	fs.StringVar(&c.OwnNamespace, "own-namespace", "kueue-guard-system", "kueue-guard's own namespace, never judged (as the server's --namespace)")
}

// Run answers and writes the report: exit 0 when answered, 2 when the
// command line, the cluster or the workload could not be read.
func (c *WhyCLI) Run(ctx context.Context, fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (int, error) {
	fail := func(err error) (int, error) {
		fmt.Fprintf(stderr, "kueue-guard why: %v\n", err)
		return review.ExitInputError, err
	}
	if c.Output != review.FormatText && c.Output != review.FormatJSON {
		return fail(fmt.Errorf("--output %q: use %s or %s", c.Output, review.FormatText, review.FormatJSON))
	}
	switch {
	case c.All && (len(args) > 0 || c.Namespace == ""):
		return fail(errors.New("--all explains the pending workloads of one namespace: give -n NAMESPACE and no workload"))
	case !c.All && len(args) != 1:
		return fail(errors.New("give one workload as NAMESPACE/KIND/NAME, or --all -n NAMESPACE"))
	}
	c.policiesSet = fs != nil && fs.Changed("policies")
	cfg, policyDir, err := review.LoadConfig(c.ConfigFile, c.PolicyDir, c.policiesSet)
	if err != nil {
		return fail(err)
	}
	restCfg, err := live.LoadConfig(c.Kube, "kueue-guard why")
	if err != nil {
		return fail(err)
	}
	state, err := review.ListCluster(ctx, restCfg, cfg.KueueNamespace)
	if err == nil {
		err = review.ListWorkloads(ctx, restCfg, state)
	}
	if err != nil {
		return fail(fmt.Errorf("reading the cluster state from %s: %w", restCfg.Host, err))
	}
	var objects []*unstructured.Unstructured
	if c.All {
		l, err := List(ctx, restCfg, ListOptions{Config: cfg, OwnNamespace: c.OwnNamespace, Namespace: c.Namespace})
		if err != nil {
			return fail(fmt.Errorf("listing the workloads of %s: %w", restCfg.Host, err))
		}
		objects = l.Workloads
	} else {
		ns, in, name, err := ParseTarget(args[0])
		if err != nil {
			return fail(err)
		}
		r, err := live.New(restCfg)
		if err != nil {
			return fail(err)
		}
		u, err := r.Get(ctx, in.GVK, ns, name)
		if err != nil {
			return fail(err)
		}
		objects = []*unstructured.Unstructured{u}
	}
	rep, err := Explain(ctx, review.Options{Config: cfg, ConfigFile: c.ConfigFile, PolicyDir: policyDir, State: state,
		OwnNamespace: c.OwnNamespace}, restCfg.Host, objects, c.All)
	if err != nil {
		return fail(err)
	}
	if c.Output == review.FormatJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		_, err = io.WriteString(stdout, renderWhy(rep))
	}
	if err != nil {
		return fail(fmt.Errorf("writing the report: %w", err))
	}
	return 0, nil
}

// Explain answers for each object: the audit judges them (as CREATEs by
// Auditor), Kueue's scheduler is asked about their pending Workloads.
// pendingOnly leaves out those admitted, finished or without a Workload.
func Explain(ctx context.Context, o review.Options, where string, objects []*unstructured.Unstructured, pendingOnly bool) (*WhyReport, error) {
	rep, err := Judge(ctx, o, where, &Listing{Workloads: objects, Count: len(objects)})
	if err != nil {
		return nil, err
	}
	sim, err := o.State.Simulator(ctx)
	if err != nil {
		return nil, err
	}
	out := &WhyReport{APIVersion: WhyAPIVersion, Kind: WhyKind, Answers: []*WhyAnswer{}, Notes: []string{}}
	for i, u := range objects {
		a := answer(ctx, u, rep.Objects[i], o.State, sim)
		if pendingOnly && (a.Cause == CauseAdmitted || a.Cause == CauseFinished || a.Cause == CauseNoWorkload) {
			continue
		}
		out.Answers = append(out.Answers, a)
	}
	if pendingOnly && len(out.Answers) == 0 {
		out.Notes = append(out.Notes, "no pending workload")
	}
	return out, nil
}

// renderWhy is the text report: the cause first, then Kueue's account, the
// simulation and the policies' findings.
func renderWhy(rep *WhyReport) string {
	var b strings.Builder
	for _, a := range rep.Answers {
		fmt.Fprintf(&b, "%s %s/%s: %s — %s\n", a.Kind, a.Namespace, a.Name, a.Cause, a.Summary)
		if w := a.Workload; w != nil {
			fmt.Fprintf(&b, "  Kueue: Workload %s in LocalQueue %s, priority %d\n", w.Name, w.QueueName, w.Priority)
			for _, c := range w.Conditions {
				fmt.Fprintf(&b, "    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		if q := a.ClusterQueue; q != nil {
			state := "active"
			if !q.Active {
				state = "inactive: " + q.Message
			}
			fmt.Fprintf(&b, "  ClusterQueue %s: %s; %d pending, %d holding quota\n", q.Name, state, q.PendingWorkloads, q.ReservingWorkloads)
		}
		if s := a.Simulation; s != nil {
			fmt.Fprintf(&b, "  simulate: %s", s.Verdict)
			if s.Reason != "" || s.Message != "" {
				fmt.Fprintf(&b, " (%s)", strings.TrimPrefix(s.Reason+": "+s.Message, ": "))
			}
			b.WriteString("\n")
			if s.Ahead != nil && s.Ahead.ClusterQueue > 0 {
				fmt.Fprintf(&b, "    ahead: %d in ClusterQueue %s, %d in LocalQueue %s\n", s.Ahead.ClusterQueue, s.ClusterQueue, s.Ahead.LocalQueue, s.LocalQueue)
			}
			for _, v := range s.Preempts {
				fmt.Fprintf(&b, "    would preempt: %s/%s (%s)\n", v.Namespace, v.Name, v.Reason)
			}
		}
		for _, f := range a.Findings {
			fmt.Fprintf(&b, "  policy: %s %s: %s\n", f.Enforcement, f.Rule, f.Message)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}
