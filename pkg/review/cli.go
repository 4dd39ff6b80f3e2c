package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kueue-guard/kueue-guard/pkg/config"
)

// CLI is `kueue-guard review`'s flags and behaviour. It lives here, not in the
// command package, so that exit codes and flag validation are tested with the
// rest of the reviewer; cmd/webhook wraps it in a cobra command.
type CLI struct {
	// Files are the -f paths (and positional arguments).
	Files []string
	// PolicyDir, ConfigFile, ClusterState, Kubeconfig and KubeContext are the
	// flags of the same names (see AddFlags for their meaning and defaults).
	PolicyDir    string
	ConfigFile   string
	ClusterState string
	Kubeconfig   string
	KubeContext  string
	// Output is the format: one of Formats.
	Output string
	// As and AsGroups are the requesting user.
	As       string
	AsGroups []string
	// ShowMutations is "", ShowPatches or ShowManifests.
	ShowMutations string
	// Explain adds placements; NoColor turns colour off even on a terminal.
	Explain bool
	NoColor bool
	// DefaultNamespace is -n; OwnNamespace is --kueue-guard-namespace.
	DefaultNamespace string
	OwnNamespace     string
	// Version is kueue-guard's version, for SARIF.
	Version string
	// Color forces colour on (tests); normally decided from the terminal.
	Color bool

	policiesSet bool
}

// UsageError is a command line that cannot run: the CLI exits with
// ExitInputError without reviewing anything.
type UsageError struct {
	// Err says what is wrong with the command line.
	Err error
}

// Error implements error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *UsageError) Unwrap() error { return e.Err }

// AddFlags registers the flags on a flag set.
func (c *CLI) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&c.Files, "filename", "f", nil,
		"Manifests to review: a file, a directory (recursive: .yaml, .yml, .json) or - for stdin; repeatable")
	fs.StringVar(&c.PolicyDir, "policies", "",
		"Rego policy directory (default: the configuration's policies.directory when --config is given, else none)")
	fs.StringVar(&c.ConfigFile, "config", "", "kueue-guard configuration file (default: the built-in defaults)")
	fs.StringVar(&c.ClusterState, "cluster-state", "",
		"YAML of the cluster the manifests go to: Namespaces, LocalQueues, ClusterQueues, ResourceFlavors, "+
			"WorkloadPriorityClasses, Kueue's ConfigMap, Deployments")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "Read the cluster state from a live cluster (one read-only listing)")
	fs.StringVar(&c.KubeContext, "context", "", "Kubeconfig context to use with --kubeconfig")
	fs.StringVarP(&c.Output, "output", "o", FormatText, "Output format: "+strings.Join(Formats, ", "))
	fs.StringVar(&c.As, "as", "", "Username the objects are created as (policies see it in input.request.userInfo)")
	fs.StringArrayVar(&c.AsGroups, "as-group", nil, "Group the user belongs to; repeatable ("+AuthenticatedGroup+" is always added)")
	fs.StringVar(&c.ShowMutations, "show-mutations", "",
		"Show what the mutating webhook changes: "+ShowPatches+" (the JSON patches) or "+ShowManifests+" (the patched objects)")
	fs.BoolVar(&c.Explain, "explain", false,
		"Show where each workload would land: namespace → LocalQueue (and why) → ClusterQueue → flavors whose quota could hold it")
	fs.BoolVar(&c.NoColor, "no-color", false, "Never colour the text output (it is coloured only on a terminal, and never with NO_COLOR set)")
	fs.StringVarP(&c.DefaultNamespace, "namespace", "n", DefaultNamespace, "Namespace of namespaced objects that name none")
	fs.StringVar(&c.OwnNamespace, "kueue-guard-namespace", "",
		"kueue-guard's own namespace, exempt from its webhooks as in the server (default: none)")
}

// validate checks the flags before anything is read.
func (c *CLI) validate(fs *pflag.FlagSet, args []string) error {
	c.Files = append(c.Files, args...)
	if fs != nil {
		c.policiesSet = fs.Changed("policies")
	} else {
		c.policiesSet = c.PolicyDir != ""
	}
	var errs []error
	if len(c.Files) == 0 {
		errs = append(errs, errors.New("no manifests: give -f PATH (a file, a directory, or - for stdin)"))
	}
	if !slices.Contains(Formats, c.Output) {
		errs = append(errs, fmt.Errorf("--output %q: use one of %s", c.Output, strings.Join(Formats, ", ")))
	}
	if c.ShowMutations != "" && c.ShowMutations != ShowPatches && c.ShowMutations != ShowManifests {
		errs = append(errs, fmt.Errorf("--show-mutations %q: use %s or %s", c.ShowMutations, ShowPatches, ShowManifests))
	}
	if c.ClusterState != "" && c.Kubeconfig != "" {
		errs = append(errs, errors.New("--cluster-state and --kubeconfig both give the cluster state: use one"))
	}
	if c.KubeContext != "" && c.Kubeconfig == "" {
		errs = append(errs, errors.New("--context needs --kubeconfig"))
	}
	if c.policiesSet && c.PolicyDir == "" {
		errs = append(errs, errors.New("--policies needs a directory"))
	}
	if len(errs) > 0 {
		return &UsageError{Err: errors.Join(errs...)}
	}
	return nil
}

// Run reviews the manifests and writes the report to stdout. It returns the exit
// code (ExitAllowed, ExitDenied, ExitInputError) and, for a non-zero code, an
// error that says why in one line; messages about unusable input also go to
// stderr with everything needed to fix them.
func (c *CLI) Run(ctx context.Context, fs *pflag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fail := func(err error) (int, error) {
		fmt.Fprintf(stderr, "kueue-guard review: %v\n", err)
		return ExitInputError, err
	}
	if err := c.validate(fs, args); err != nil {
		return fail(err)
	}
	cfg := config.Default()
	if c.ConfigFile != "" {
		var err error
		if cfg, err = config.Load(c.ConfigFile); err != nil {
			return fail(err)
		}
		if !c.policiesSet {
			c.PolicyDir = cfg.Policies.Directory
		}
	}
	var state *State
	switch {
	case c.ClusterState != "":
		var errs []*InputError
		state, errs = LoadStateFile(c.ClusterState, cfg.KueueNamespace)
		if len(errs) > 0 {
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			return fail(fmt.Errorf("cluster state:\n  %s", strings.Join(msgs, "\n  ")))
		}
	case c.Kubeconfig != "":
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig}
		restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: c.KubeContext}).ClientConfig()
		if err != nil {
			return fail(fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err))
		}
		if state, err = ListCluster(ctx, restCfg, cfg.KueueNamespace); err != nil {
			return fail(fmt.Errorf("reading the cluster state from %s: %w", restCfg.Host, err))
		}
	}
	manifests, readErrs := Read(c.Files, stdin)
	rep, err := Review(ctx, Options{
		Config: cfg, ConfigFile: c.ConfigFile, PolicyDir: c.PolicyDir, State: state,
		User:             authenticationv1.UserInfo{Username: c.As, Groups: c.AsGroups},
		DefaultNamespace: c.DefaultNamespace, OwnNamespace: c.OwnNamespace,
		Explain: c.Explain, Mutated: c.ShowMutations == ShowManifests,
	}, manifests, readErrs)
	if err != nil {
		return fail(err)
	}
	ro := RenderOptions{Color: c.Color || (!c.NoColor && os.Getenv("NO_COLOR") == "" && isTerminal(stdout)),
		ShowMutations: c.ShowMutations, ToolVersion: c.Version}
	if err := Render(stdout, rep, c.Output, ro); err != nil {
		return fail(fmt.Errorf("writing the report: %w", err))
	}
	switch rep.ExitCode {
	case ExitDenied:
		return ExitDenied, fmt.Errorf("%s denied", plural(rep.Summary.Denied, "object", "objects"))
	case ExitInputError:
		for _, e := range rep.Errors {
			fmt.Fprintf(stderr, "kueue-guard review: %v\n", e)
		}
		return ExitInputError, fmt.Errorf("%s could not be read or reviewed",
			plural(rep.Summary.InputErrors+rep.Summary.Errors, "input", "inputs"))
	}
	return ExitAllowed, nil
}

// isTerminal reports whether w is a terminal (a character device), so that a
// report piped to a file or a CI log has no escape codes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
