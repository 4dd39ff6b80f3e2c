package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// newReviewCommand is `kueue-guard review`: the webhook's pipeline run offline on
// manifests. Exit codes: 0 allowed (warnings allowed), 1 denied (or warnings,
// with --fail-on-warn), 2 usage or input error — unknown flags included, which
// cobra would otherwise turn into 1.
func newReviewCommand() *cobra.Command {
	c := &review.CLI{Version: version}
	cmd := &cobra.Command{
		Use:   "review -f PATH... [--policies DIR] [--config FILE] [--cluster-state FILE | --live-cluster [--kubeconfig PATH] [--context NAME]] [-o text|json|junit|sarif]",
		Short: "Review manifests offline with the webhook's pipeline and policies",
		Long: "Run every object of the manifests through the same pipeline as the webhook (queue defaulting,\n" +
			"integration guard, queue checks, controller guard, Rego policies) as a CREATE, against a cluster state\n" +
			"(a file, a live cluster, or none: queue checks then say \"unknown\"). Namespaces, LocalQueues and\n" +
			"ClusterQueues in the manifests join the cluster state.\n\n" +
			"Nothing is read from a cluster without --live-cluster, which finds the cluster as kubectl does\n" +
			"(--kubeconfig, else KUBECONFIG, else ~/.kube/config). No policies run unless --policies or the\n" +
			"--config file's policies.directory names a directory.\n\n" +
			"Exit codes: 0 allowed (warnings allowed), 1 denied (or warnings, with --fail-on-warn),\n" +
			"2 usage or input error.",
		Example: "  kueue-guard review -f examples/ --policies policies/ --cluster-state examples/cluster-state.yaml\n" +
			"  kueue-guard review -f deploy/ --policies policies/ --live-cluster --context staging --fail-on-warn\n" +
			"  helm template my-chart | kueue-guard review -f - --config config.yaml -o sarif > review.sarif",
		SilenceUsage: true,
		// Run prints its own errors; exit codes carry the verdict.
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := c.Run(cmd.Context(), cmd.Flags(), args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code == review.ExitAllowed {
				return nil
			}
			if err == nil {
				err = errors.New("review failed")
			}
			return &exitError{code: code, err: err}
		},
	}
	c.AddFlags(cmd.Flags())
	usageErrors(cmd, review.ExitInputError)
	return cmd
}
