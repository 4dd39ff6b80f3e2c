package preflight

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// CLI is `kueue-guard preflight`.
type CLI struct {
	Kube       *genericclioptions.ConfigFlags
	Target     string
	Output     string
	ConfigFile string
	Explain    bool
}

// AddFlags registers the flags.
func (c *CLI) AddFlags(fs *pflag.FlagSet) {
	if c.Kube == nil {
		c.Kube = review.NewKubeFlags()
	}
	c.Kube.AddFlags(fs)
	fs.StringVar(&c.Target, "target", "", "The Kueue install to move to: managed or oss (required)")
	fs.StringVarP(&c.Output, "output", "o", FormatText, "Output format: "+strings.Join(Formats, ", "))
	fs.StringVar(&c.ConfigFile, "config", "", "kueue-guard's configuration file (default: the configuration kueue-guard's chart installed in the cluster)")
	fs.BoolVar(&c.Explain, "explain", false, "Say why each check matters and link its documentation")
}

// Run checks the cluster and writes the report; it returns the exit code.
func (c *CLI) Run(ctx context.Context, stdout, stderr io.Writer) int {
	target, err := ParseTarget(c.Target)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard preflight: %v\n", err)
		return ExitError
	}
	if !slices.Contains(Formats, c.Output) {
		fmt.Fprintf(stderr, "kueue-guard preflight: -o %q: must be one of %s\n", c.Output, strings.Join(Formats, ", "))
		return ExitError
	}
	restCfg, err := live.LoadConfig(c.Kube, "kueue-guard preflight")
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard preflight: %v\n", err)
		return ExitError
	}
	state, err := Gather(ctx, restCfg, Options{Target: target, ConfigFile: c.ConfigFile})
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard preflight: %s: %v\n", restCfg.Host, err)
		return ExitError
	}
	rep := Judge(target, state)
	if c.Output == FormatJSON {
		err = RenderJSON(stdout, rep)
	} else {
		err = RenderText(stdout, rep, c.Explain)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard preflight: writing the report: %v\n", err)
		return ExitError
	}
	return rep.ExitCode()
}
