package audit

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// Auditor is the user the audited workloads are judged as created by: not a
// trusted controller, so every guard and policy applies; policies that judge
// by user see this name.
const Auditor = "kueue-guard:audit"

// CLI is `kueue-guard audit`: every top-level workload of a live cluster,
// judged by the admission pipeline as if created now, rendered as
// `kueue-guard review` renders manifests, with its exit codes.
type CLI struct {
	Kube         *genericclioptions.ConfigFlags
	Namespace    string
	ConfigFile   string
	PolicyDir    string
	Output       string
	OwnNamespace string
	Limit        int
	FailOnWarn   bool
	// Version is kueue-guard's version, for SARIF.
	Version string

	policiesSet bool
}

// AddFlags registers the flags.
func (c *CLI) AddFlags(fs *pflag.FlagSet) {
	if c.Kube == nil {
		c.Kube = review.NewKubeFlags()
	}
	c.Kube.AddFlags(fs)
	fs.StringVarP(&c.Namespace, "namespace", "n", "", "Audit this namespace only (default: every namespace the webhooks judge)")
	fs.StringVar(&c.ConfigFile, "config", "", "kueue-guard configuration file (default: the built-in defaults)")
	fs.StringVar(&c.PolicyDir, "policies", "", "Rego policy directory (default: the policies.directory the --config file names, else none)")
	fs.StringVarP(&c.Output, "output", "o", review.FormatText, "Output format: "+strings.Join(review.Formats, ", "))
	fs.StringVar(&c.OwnNamespace, "own-namespace", "kueue-guard-system", "kueue-guard's own namespace, never judged (as the server's --namespace)")
	fs.IntVar(&c.Limit, "limit", 0, "Audit at most this many workloads (0: all); the report says when it was cut")
	fs.BoolVar(&c.FailOnWarn, "fail-on-warn", false, "Exit 1 when a workload has warnings, not only when one would be denied")
}

// Run audits the cluster and writes the report. The exit code is the
// reviewer's: 0 every workload would be admitted, 1 one would be denied (or
// warned, with --fail-on-warn), 2 the audit could not run.
func (c *CLI) Run(ctx context.Context, fs *pflag.FlagSet, stdout, stderr io.Writer) (int, error) {
	fail := func(err error) (int, error) {
		fmt.Fprintf(stderr, "kueue-guard audit: %v\n", err)
		return review.ExitInputError, err
	}
	if !slices.Contains(review.Formats, c.Output) {
		return fail(fmt.Errorf("--output %q: use one of %s", c.Output, strings.Join(review.Formats, ", ")))
	}
	c.policiesSet = fs != nil && fs.Changed("policies")
	cfg, policyDir, err := review.LoadConfig(c.ConfigFile, c.PolicyDir, c.policiesSet)
	if err != nil {
		return fail(err)
	}
	c.PolicyDir = policyDir
	restCfg, err := live.LoadConfig(c.Kube, "kueue-guard audit")
	if err != nil {
		return fail(err)
	}
	state, err := review.ListCluster(ctx, restCfg, cfg.KueueNamespace)
	if err != nil {
		return fail(fmt.Errorf("reading the cluster state from %s: %w", restCfg.Host, err))
	}
	listing, err := List(ctx, restCfg, ListOptions{Config: cfg, OwnNamespace: c.OwnNamespace, Namespace: c.Namespace, Limit: c.Limit})
	if err != nil {
		return fail(fmt.Errorf("listing the workloads of %s: %w", restCfg.Host, err))
	}
	rep, err := Judge(ctx, review.Options{
		Config: cfg, ConfigFile: c.ConfigFile, PolicyDir: c.PolicyDir, State: state,
		OwnNamespace: c.OwnNamespace, FailOnWarn: c.FailOnWarn,
	}, restCfg.Host, listing)
	if err != nil {
		return fail(err)
	}
	ro := review.RenderOptions{Color: os.Getenv("NO_COLOR") == "" && review.IsTerminal(stdout), ToolVersion: c.Version,
		Command: "kueue-guard audit"}
	if err := review.Render(stdout, rep, c.Output, ro); err != nil {
		return fail(fmt.Errorf("writing the report: %w", err))
	}
	switch rep.Result {
	case review.ResultDenied:
		return rep.ExitCode, fmt.Errorf("%d of %d workloads would be denied", rep.Summary.Denied, len(rep.Objects))
	case review.ResultWarned:
		return rep.ExitCode, fmt.Errorf("%d of %d workloads have warnings", rep.Summary.Warned, len(rep.Objects))
	case review.ResultError:
		return rep.ExitCode, fmt.Errorf("%d workloads could not be judged", rep.Summary.Errors)
	}
	return rep.ExitCode, nil
}

// Judge runs the reviewer's pipeline over the listed workloads, each as a
// CREATE by Auditor, and notes what the listing covered. where names the
// cluster in the workloads' sources.
func Judge(ctx context.Context, o review.Options, where string, l *Listing) (*review.Report, error) {
	o.User = authenticationv1.UserInfo{Username: Auditor}
	manifests := make([]*review.Manifest, len(l.Workloads))
	for i, u := range l.Workloads {
		manifests[i] = &review.Manifest{Source: review.Source{File: "live cluster " + where, Document: i + 1}, Object: trimmed(u)}
	}
	rep, err := review.Review(ctx, o, manifests, nil)
	if err != nil {
		return nil, err
	}
	var kinds []string
	for _, gvk := range l.Kinds {
		kinds = append(kinds, gvk.Kind)
	}
	note := fmt.Sprintf("audited %d workloads of the live cluster %s, as CREATEs by %s; kinds listed: %s",
		len(l.Workloads), where, Auditor, strings.Join(kinds, ", "))
	if l.Children > 0 {
		note += fmt.Sprintf("; %d objects judged as part of the workload that owns them", l.Children)
	}
	rep.Notes = append(rep.Notes, note)
	if len(l.NotServed) > 0 {
		var missing []string
		for _, gvk := range l.NotServed {
			missing = append(missing, gvk.GroupVersion().String()+" "+gvk.Kind)
		}
		rep.Notes = append(rep.Notes, "not served by the cluster, so not listed: "+strings.Join(missing, ", "))
	}
	if l.Truncated {
		rep.Notes = append(rep.Notes, fmt.Sprintf("cut at --limit: only the first %d workloads were audited", len(l.Workloads)))
	}
	return rep, nil
}

// trimmed is the object without what an API server adds that a CREATE would
// not carry: managedFields (large, and not the workload).
func trimmed(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetManagedFields(nil)
	return u
}
