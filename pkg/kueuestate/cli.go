package kueuestate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// Exit codes of the kueue commands.
const (
	// ExitOK: exported; the cluster holds the export; restored and active.
	ExitOK = 0
	// ExitDiffers: the cluster lacks or differs from the export (diff), or
	// a restored ClusterQueue did not become active in time (restore).
	ExitDiffers = 1
	// ExitError: bad usage, or the cluster could not be read or written.
	ExitError = 2
)

// CLI is `kueue-guard kueue export|diff|restore`.
type CLI struct {
	Kube       *genericclioptions.ConfigFlags
	ConfigFile string
	// Dir is export's --output-dir (empty: stdout) and diff's and restore's
	// -f.
	Dir string
	// Timeout bounds restore's wait for the ClusterQueues to be active.
	Timeout time.Duration
}

// AddFlags registers the flags every kueue command has.
func (c *CLI) AddFlags(fs *pflag.FlagSet) {
	if c.Kube == nil {
		c.Kube = review.NewKubeFlags()
	}
	c.Kube.AddFlags(fs)
	fs.StringVar(
		&c.ConfigFile,
		"config",
		"",
		"kueue-guard configuration file: its installProfile (oss exports Kueue's Configuration ConfigMap too) and kueueNamespace (default: the built-in defaults, managed)",
	)
}

func (c *CLI) connect(what string) (*Client, *config.Configuration, error) {
	cfg := config.Default()
	if c.ConfigFile != "" {
		var err error
		if cfg, err = config.Load(c.ConfigFile); err != nil {
			return nil, nil, err
		}
	}
	restCfg, err := live.LoadConfig(c.Kube, what)
	if err != nil {
		return nil, nil, err
	}
	cl, err := NewClient(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", restCfg.Host, err)
	}
	return cl, cfg, nil
}

// Export writes every admin-owned Kueue object of the cluster, cleaned for
// Git, to c.Dir (one file per kind, in apply order) or to stdout.
func (c *CLI) Export(ctx context.Context, stdout, stderr io.Writer) int {
	cl, cfg, err := c.connect("kueue-guard kueue export")
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard kueue export: %v\n", err)
		return ExitError
	}
	ns := ""
	if cfg.InstallProfile == config.ProfileOSS {
		ns = cfg.KueueNamespace
	}
	objs, err := cl.Export(ctx, ns)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard kueue export: %v\n", err)
		return ExitError
	}
	files, err := Write(objs, c.Dir, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard kueue export: %v\n", err)
		return ExitError
	}
	if c.Dir != "" {
		fmt.Fprintf(stdout, "exported %s to %s:\n", countKinds(objs), c.Dir)
		for _, f := range files {
			fmt.Fprintf(stdout, "  %s\n", f)
		}
		fmt.Fprintf(stdout, "apply in this order with: kubectl apply --server-side -f %s (or kueue-guard kueue restore -f %s)\n", c.Dir, c.Dir)
	}
	if len(cl.NotServed) > 0 {
		fmt.Fprintf(stderr, "not served by the cluster, so not exported: %v\n", cl.NotServed)
	}
	return ExitOK
}

// countKinds says how many objects of each kind, in apply order.
func countKinds(objs []*unstructured.Unstructured) string {
	var order []string
	n := map[string]int{}
	for _, o := range objs {
		if n[o.GetKind()] == 0 {
			order = append(order, o.GetKind())
		}
		n[o.GetKind()]++
	}
	if len(order) == 0 {
		return "no objects"
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return strings.Join(parts, ", ")
}

// Diff compares c.Dir with the cluster and prints what the cluster lacks or
// holds differently: exit 1 when it does.
func (c *CLI) Diff(ctx context.Context, stdout, stderr io.Writer) int {
	want, cl, ok := c.readAndConnect("diff", stderr)
	if !ok {
		return ExitError
	}
	changes, err := cl.Diff(ctx, want)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard kueue diff: %v\n", err)
		return ExitError
	}
	differs := 0
	for _, ch := range changes {
		fmt.Fprintln(stdout, ch)
		if !ch.Extra {
			differs++
		}
	}
	if differs > 0 {
		fmt.Fprintf(stdout, "%d of %d objects of %s are missing or differ in the cluster: restore them (kueue-guard kueue restore -f %s) before Kueue admits queued jobs\n",
			differs, len(want), c.Dir, c.Dir)
		return ExitDiffers
	}
	fmt.Fprintf(stdout, "the cluster holds all %d objects of %s\n", len(want), c.Dir)
	return ExitOK
}

// readAndConnect reads the export of -f and connects to the cluster, saying
// on stderr what failed.
func (c *CLI) readAndConnect(cmd string, stderr io.Writer) ([]*unstructured.Unstructured, *Client, bool) {
	if c.Dir == "" {
		fmt.Fprintf(stderr, "kueue-guard kueue %s: -f DIR is required: the directory kueue-guard kueue export wrote\n", cmd)
		return nil, nil, false
	}
	objs, err := Read(c.Dir)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard kueue %s: reading %s: %v\n", cmd, c.Dir, err)
		return nil, nil, false
	}
	cl, _, err := c.connect("kueue-guard kueue " + cmd)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-guard kueue %s: %v\n", cmd, err)
		return nil, nil, false
	}
	return objs, cl, true
}

// Restore applies c.Dir server-side in dependency order, then waits until
// every ClusterQueue it holds is active.
func (c *CLI) Restore(ctx context.Context, stdout, stderr io.Writer) int {
	want, cl, ok := c.readAndConnect("restore", stderr)
	if !ok {
		return ExitError
	}
	var queues []string
	for _, o := range want {
		if err := cl.Apply(ctx, o); err != nil {
			fmt.Fprintf(stderr, "kueue-guard kueue restore: applying %s %s: %v\n", o.GetKind(), name(o), err)
			return ExitError
		}
		fmt.Fprintf(stdout, "applied  %s %s\n", o.GetKind(), name(o))
		if o.GetKind() == "ClusterQueue" {
			queues = append(queues, o.GetName())
		}
	}
	deadline := time.Now().Add(c.Timeout)
	for _, q := range queues {
		for {
			active, msg, err := cl.Active(ctx, q)
			if err != nil {
				fmt.Fprintf(stderr, "kueue-guard kueue restore: reading ClusterQueue %s: %v\n", q, err)
				return ExitError
			}
			if active {
				fmt.Fprintf(stdout, "active   ClusterQueue %s\n", q)
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(stdout, "inactive ClusterQueue %s after %v: %s\n", q, c.Timeout, msg)
				return ExitDiffers
			}
			select {
			case <-ctx.Done():
				return ExitError
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	fmt.Fprintf(stdout, "restored %s; %d ClusterQueues active\n", countKinds(want), len(queues))
	return ExitOK
}

func name(o *unstructured.Unstructured) string {
	if o.GetNamespace() != "" {
		return o.GetNamespace() + "/" + o.GetName()
	}
	return o.GetName()
}
