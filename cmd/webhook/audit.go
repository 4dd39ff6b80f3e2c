package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/kueue-guard/kueue-guard/pkg/audit"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// newAuditCommand is `kueue-guard audit`: every workload a live cluster runs,
// judged by the webhook's pipeline as if created now. Exit codes as review's.
func newAuditCommand() *cobra.Command {
	c := &audit.CLI{Version: version}
	cmd := &cobra.Command{
		Use:   "audit [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] [--config FILE] [--policies DIR] [-o text|json|junit|sarif]",
		Short: "Judge every workload a live cluster already runs, as if it were created now",
		Long: "List every top-level workload of every Kueue integration kind the cluster serves (page by page,\n" +
			"in the namespaces the webhooks judge; a Job's pods, a JobSet's Jobs are judged as their owner) and\n" +
			"run each through the webhook's pipeline (queue defaulting, integration guard, queue checks, Rego\n" +
			"policies, dryrun ones included) as a CREATE by " + audit.Auditor + ", against the cluster's own queues.\n" +
			"The cluster is found as kubectl finds it (--kubeconfig, else KUBECONFIG, else ~/.kube/config); the\n" +
			"listing only reads.\n\n" +
			"Exit codes: 0 every workload would be admitted (warnings allowed), 1 one would be denied (or warned,\n" +
			"with --fail-on-warn), 2 usage error or the cluster could not be read.",
		Example: "  kueue-guard audit --config config.yaml --policies policies/\n" +
			"  kueue-guard audit --context staging -n ml-team -o json | jq '.objects[] | select(.status == \"denied\")'",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := c.Run(cmd.Context(), cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code == review.ExitAllowed {
				return nil
			}
			if err == nil {
				err = errors.New("audit failed")
			}
			return &exitError{code: code, err: err}
		},
	}
	c.AddFlags(cmd.Flags())
	usageErrors(cmd, review.ExitInputError)
	return cmd
}
