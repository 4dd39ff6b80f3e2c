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
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/live"
)

// CLI is `kueue-guard review`'s flags and behaviour. It lives here, not in the
// command package, so that exit codes and flag validation are tested with the
// rest of the reviewer; cmd/webhook wraps it in a cobra command.
//
// Its defaults are a laptop's, not the webhook pod's: no policy directory unless
// one is named, and nothing read from any cluster without LiveCluster.
type CLI struct {
	// Files are the -f paths (and positional arguments).
	Files []string
	// PolicyDir, ConfigFile and ClusterState are the flags of the same names
	// (see AddFlags for their meaning and defaults).
	PolicyDir    string
	ConfigFile   string
	ClusterState string
	// LiveCluster is --live-cluster: read the cluster state from the cluster
	// Kube chooses.
	LiveCluster bool
	// Kube chooses the live cluster as kubectl does (--kubeconfig, KUBECONFIG,
	// ~/.kube/config; --context, --cluster, --user). AddFlags sets it to
	// NewKubeFlags() when nil, and so does Run.
	Kube *genericclioptions.ConfigFlags
	// Output is the format: one of Formats.
	Output string
	// As and AsGroups are the requesting user of the reviewed objects (not an
	// impersonation: the live listing is made as the kubeconfig's user).
	As       string
	AsGroups []string
	// ShowMutations is "", ShowPatches or ShowManifests.
	ShowMutations string
	// Explain adds placements; NoColor turns colour off even on a terminal.
	Explain bool
	NoColor bool
	// FailOnWarn makes warnings fail the review (exit code 1), as denials do.
	FailOnWarn bool
	// DefaultNamespace is -n; OwnNamespace is --kueue-guard-namespace.
	DefaultNamespace string
	OwnNamespace     string
	// Version is kueue-guard's version, for SARIF.
	Version string
	// Color forces colour on (tests); normally decided from the terminal.
	Color bool

	policiesSet bool
	kubeSet     []string
}

// NewKubeFlags are the kubeconfig flags of a read-only listing, kubectl's own:
// --kubeconfig, --context, --cluster and --user. Not the namespace (-n is the
// reviewed objects' default namespace), not impersonation (--as and --as-group
// are the reviewed objects' requesting user), and no credentials or server on
// the command line: they belong in the kubeconfig.
func NewKubeFlags() *genericclioptions.ConfigFlags {
	return &genericclioptions.ConfigFlags{KubeConfig: new(""), Context: new(""), ClusterName: new(""), AuthInfoName: new("")}
}

// kubeFlagNames are NewKubeFlags' flags, each with its value.
func kubeFlagNames(k *genericclioptions.ConfigFlags) []struct{ name, value string } {
	value := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return []struct{ name, value string }{{"kubeconfig", value(k.KubeConfig)}, {"context", value(k.Context)},
		{"cluster", value(k.ClusterName)}, {"user", value(k.AuthInfoName)}}
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
		"Rego policy directory (default: the policies.directory the --config file names, else none)")
	fs.StringVar(&c.ConfigFile, "config", "", "kueue-guard configuration file (default: the built-in defaults)")
	fs.StringVar(&c.ClusterState, "cluster-state", "",
		"YAML of the cluster the manifests go to: Namespaces, LocalQueues, ClusterQueues, ResourceFlavors, "+
			"WorkloadPriorityClasses, Kueue's ConfigMap, Deployments")
	fs.BoolVar(&c.LiveCluster, "live-cluster", false,
		"Read the cluster state from a live cluster (one read-only listing), chosen as kubectl does: "+
			"--kubeconfig, else KUBECONFIG, else ~/.kube/config; without it nothing is read from any cluster")
	if c.Kube == nil {
		c.Kube = NewKubeFlags()
	}
	c.Kube.AddFlags(fs)
	for name, usage := range map[string]string{
		"kubeconfig": "Kubeconfig file of --live-cluster (default: KUBECONFIG, else ~/.kube/config)",
		"context":    "Kubeconfig context of --live-cluster (default: the current context)",
		"cluster":    "Kubeconfig cluster of --live-cluster (default: the context's)",
		"user":       "Kubeconfig user the --live-cluster listing is made as (the reviewed objects' user is --as)",
	} {
		if f := fs.Lookup(name); f != nil {
			f.Usage = usage
		}
	}
	fs.StringVarP(&c.Output, "output", "o", FormatText, "Output format: "+strings.Join(Formats, ", "))
	fs.StringVar(&c.As, "as", "", "Username the reviewed objects are created as (policies see it in input.request.userInfo); not an impersonation")
	fs.StringArrayVar(&c.AsGroups, "as-group", nil, "Group the user belongs to; repeatable ("+AuthenticatedGroup+" is always added)")
	fs.StringVar(&c.ShowMutations, "show-mutations", "",
		"Show what the mutating webhook changes: "+ShowPatches+" (the JSON patches) or "+ShowManifests+" (the patched objects)")
	fs.BoolVar(&c.Explain, "explain", false,
		"Show where each workload would land: namespace → LocalQueue (and why) → ClusterQueue → flavors whose quota could hold it")
	fs.BoolVar(&c.NoColor, "no-color", false, "Never colour the text output (it is coloured only on a terminal, and never with NO_COLOR set)")
	fs.BoolVar(&c.FailOnWarn, "fail-on-warn", false, "Exit 1 when any object has warnings, not only when one is denied")
	fs.StringVarP(&c.DefaultNamespace, "namespace", "n", DefaultNamespace, "Namespace of namespaced objects that name none")
	fs.StringVar(&c.OwnNamespace, "kueue-guard-namespace", "",
		"kueue-guard's own namespace, exempt from its webhooks as in the server (default: none)")
}

// validate checks the flags before anything is read.
func (c *CLI) validate(fs *pflag.FlagSet, args []string) error {
	c.Files = append(c.Files, args...)
	if c.Kube == nil {
		c.Kube = NewKubeFlags()
	}
	c.kubeSet = nil
	for _, f := range kubeFlagNames(c.Kube) {
		set := f.value != ""
		if fs != nil && fs.Lookup(f.name) != nil {
			set = fs.Changed(f.name)
		}
		if set {
			c.kubeSet = append(c.kubeSet, "--"+f.name)
		}
	}
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
	if c.ClusterState != "" && c.LiveCluster {
		errs = append(errs, errors.New("--cluster-state and --live-cluster both give the cluster state: use one"))
	}
	if len(c.kubeSet) > 0 && !c.LiveCluster {
		// Silently ignoring them would review without the cluster the user meant.
		errs = append(errs, fmt.Errorf("%s: only with --live-cluster (without it nothing is read from any cluster)",
			strings.Join(c.kubeSet, ", ")))
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
// code (ExitAllowed, ExitDenied, ExitInputError; ExitDenied for warnings too with
// FailOnWarn) and, for a non-zero code, an error that says why in one line;
// messages about unusable input also go to stderr with everything needed to fix
// them.
func (c *CLI) Run(ctx context.Context, fs *pflag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fail := func(err error) (int, error) {
		fmt.Fprintf(stderr, "kueue-guard review: %v\n", err)
		return ExitInputError, err
	}
	o, manifests, readErrs, err := c.prepare(ctx, fs, args, stdin, false)
	if err != nil {
		return fail(err)
	}
	o.Explain, o.Mutated, o.FailOnWarn = c.Explain, c.ShowMutations == ShowManifests, c.FailOnWarn
	rep, err := Review(ctx, o, manifests, readErrs)
	if err != nil {
		return fail(err)
	}
	ro := RenderOptions{Color: c.Color || (!c.NoColor && os.Getenv("NO_COLOR") == "" && IsTerminal(stdout)),
		ShowMutations: c.ShowMutations, ToolVersion: c.Version}
	if err := Render(stdout, rep, c.Output, ro); err != nil {
		return fail(fmt.Errorf("writing the report: %w", err))
	}
	switch rep.Result {
	case ResultDenied:
		return ExitDenied, fmt.Errorf("%s denied", plural(rep.Summary.Denied, "object", "objects"))
	case ResultWarned:
		return rep.ExitCode, fmt.Errorf("%s with warnings (--fail-on-warn)", plural(rep.Summary.Warned, "object", "objects"))
	case ResultError:
		for _, e := range rep.Errors {
			fmt.Fprintf(stderr, "kueue-guard review: %v\n", e)
		}
		return ExitInputError, fmt.Errorf("%s could not be read or reviewed",
			plural(rep.Summary.InputErrors+rep.Summary.Errors, "input", "inputs"))
	}
	return ExitAllowed, nil
}

// prepare validates the flags, loads the configuration and the cluster state
// (with its Workloads for a simulation) and reads the manifests.
func (c *CLI) prepare(ctx context.Context, fs *pflag.FlagSet, args []string, stdin io.Reader, simulate bool) (
	Options, []*Manifest, []*InputError, error) {
	if err := c.validate(fs, args); err != nil {
		return Options{}, nil, nil, err
	}
	cfg, policyDir, err := LoadConfig(c.ConfigFile, c.PolicyDir, c.policiesSet)
	if err != nil {
		return Options{}, nil, nil, err
	}
	c.PolicyDir = policyDir
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
			return Options{}, nil, nil, fmt.Errorf("cluster state:\n  %s", strings.Join(msgs, "\n  "))
		}
	case c.LiveCluster:
		restCfg, err := c.liveConfig()
		if err != nil {
			return Options{}, nil, nil, err
		}
		if state, err = ListCluster(ctx, restCfg, cfg.KueueNamespace); err == nil && simulate {
			err = ListWorkloads(ctx, restCfg, state)
		}
		if err != nil {
			return Options{}, nil, nil, fmt.Errorf("reading the cluster state from %s: %w", restCfg.Host, err)
		}
	}
	manifests, readErrs := Read(c.Files, stdin)
	return Options{Config: cfg, ConfigFile: c.ConfigFile, PolicyDir: c.PolicyDir, State: state,
		User:             authenticationv1.UserInfo{Username: c.As, Groups: c.AsGroups},
		DefaultNamespace: c.DefaultNamespace, OwnNamespace: c.OwnNamespace}, manifests, readErrs, nil
}

// LoadConfig loads kueue-guard's configuration for a command run on a
// laptop (review, simulate, audit, why): the file's, else the defaults. The
// policy directory is policyDir when given on the command line
// (policiesSet), else the one the file itself names, else none: loading
// fills in the server's default, a path inside the webhook's pod.
func LoadConfig(configFile, policyDir string, policiesSet bool) (*config.Configuration, string, error) {
	if configFile == "" {
		return config.Default(), policyDir, nil
	}
	cfg, err := config.Load(configFile)
	if err != nil {
		return nil, "", err
	}
	if !policiesSet {
		named, err := NamedPolicyDirectory(configFile)
		if err != nil {
			return nil, "", err
		}
		if named {
			policyDir = cfg.Policies.Directory
		}
	}
	return cfg, policyDir, nil
}

// NamedPolicyDirectory reports whether the configuration file itself sets
// policies.directory (config.Load cannot say: it fills in the default).
func NamedPolicyDirectory(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("reading configuration file %q: %w", path, err)
	}
	var raw struct {
		Policies struct {
			Directory string `json:"directory"`
		} `json:"policies"`
	}
	if err := sigsyaml.Unmarshal(data, &raw); err != nil {
		return false, fmt.Errorf("configuration file %q: %w", path, err)
	}
	return raw.Policies.Directory != "", nil
}

// liveConfig is the REST configuration of the live cluster, loaded as kubectl
// loads it.
func (c *CLI) liveConfig() (*rest.Config, error) { return live.LoadConfig(c.Kube, "--live-cluster") }

// IsTerminal reports whether w is a terminal (a character device), so that a
// report piped to a file or a CI log has no escape codes.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
