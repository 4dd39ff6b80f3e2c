package main

import (
	"github.com/spf13/cobra"

	"github.com/kueue-guard/kueue-guard/pkg/audit"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// newWhyCommand is `kueue-guard why`: why an existing workload is where it is.
func newWhyCommand() *cobra.Command {
	c := &audit.WhyCLI{}
	cmd := &cobra.Command{
		Use:   "why NAMESPACE/KIND/NAME | --all -n NAMESPACE [--kubeconfig PATH] [--context NAME] [--config FILE] [--policies DIR] [-o text|json]",
		Short: "Say why a workload is still pending: Kueue's account, what simulate computes, and the policies' findings",
		Long: "For an existing workload of a live cluster (or every pending one of a namespace with --all), join\n" +
			"Kueue's own account (its Workload's conditions, its ClusterQueue's status), what Kueue's scheduler code\n" +
			"says of it now (what is missing, what is ahead, whom it would preempt, or that it can never be\n" +
			"admitted) and the policies' findings for it (the audit's), and name the cause first: never, policy,\n" +
			"inactive, quota, ahead, next; or admitted, finished, no-workload.\n\n" +
			"Exit codes: 0 answered, 2 usage error or the cluster or workload could not be read.",
		Example: "  kueue-guard why team-a/job/train --policies policies/\n" +
			"  kueue-guard why --all -n ml -o json | jq '.answers[] | {name, cause}'",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := c.Run(cmd.Context(), cmd.Flags(), args, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code == 0 {
				return nil
			}
			return &exitError{code: code, err: err}
		},
	}
	c.AddFlags(cmd.Flags())
	usageErrors(cmd, review.ExitInputError)
	return cmd
}
