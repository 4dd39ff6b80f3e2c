package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// newSimulateCommand is `kueue-guard simulate`: the webhook's verdict on each
// manifest, then Kueue's scheduler's on each allowed workload. Exit codes: 0
// admitted now, 3 would wait, 1 denied or never admitted, 2 could not read.
func newSimulateCommand() *cobra.Command {
	c := &review.SimulateCLI{CLI: review.CLI{Version: version}}
	cmd := &cobra.Command{
		Use:   "simulate -f PATH... (--cluster-state FILE | --live-cluster [--kubeconfig PATH] [--context NAME]) [--policies DIR] [--config FILE] [-o text|json]",
		Short: "Say whether Kueue would admit each workload now, make it wait, or never admit it",
		Long: "Review every object of the manifests as the webhook would (queue defaulting, guards, Rego policies),\n" +
			"then ask Kueue's own scheduler code (v0.19: flavor assignment, cohort borrowing, preemption, queue\n" +
			"order) what it would do with each allowed workload submitted now, alone, to the cluster as it stands:\n" +
			"admit it now (to which flavors, preempting whom), keep it waiting (what is missing, how many are\n" +
			"ahead), or never admit it (and Kueue's reason).\n\n" +
			"Exit codes: 0 every workload admitted now, 3 one would wait, 1 one is denied or never admitted,\n" +
			"2 usage or input error.",
		Example: "  kueue-guard simulate -f job.yaml --live-cluster\n" +
			"  kueue-guard simulate -f jobs/ --cluster-state state.yaml --policies policies/ -o json",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := c.Run(cmd.Context(), cmd.Flags(), args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code == review.ExitAdmittedNow {
				return nil
			}
			if err == nil {
				err = errors.New("simulate failed")
			}
			return &exitError{code: code, err: err}
		},
	}
	c.AddFlags(cmd.Flags())
	usageErrors(cmd, review.ExitInputError)
	return cmd
}
