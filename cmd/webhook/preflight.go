package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kueue-guard/kueue-guard/pkg/preflight"
)

// newPreflightCommand is `kueue-guard preflight`: the checks before moving a
// cluster to another Kueue install. Read-only.
func newPreflightCommand() *cobra.Command {
	c := &preflight.CLI{}
	cmd := &cobra.Command{
		Use:   "preflight --target managed|oss [--kubeconfig PATH] [--context NAME] [--config FILE] [-o text|json] [--explain]",
		Short: "Check a live cluster before moving it to a managed (or upstream) Kueue install",
		Long: "Reads the cluster (never writes) and checks what the move depends on:\n" +
			"  kubernetes-version     the API server's version against the target's minimum (managed 1.34, oss 1.29)\n" +
			"  kueue-controllers      every Kueue controller manager in any namespace, found by the singleton guard's\n" +
			"                         fingerprint, and the command that uninstalls each\n" +
			"  unsupported-workloads  every queued workload of an integration the target does not manage, and its replacement\n" +
			"  kueue-configuration    Kueue Configuration settings in use that the target does not carry\n" +
			"  webhook-order          whether Kueue's mutating webhooks run before kueue-guard's\n" +
			"  kueue-guard-profile    kueue-guard's installProfile against the target\n" +
			"Each check passes, warns or fails, says what it found and what to do.\n\n" +
			"Exit codes: 0 every check passed (warnings allowed), 1 a check failed, 2 usage error or a check could\n" +
			"not be made (and none failed).",
		Example: "  kueue-guard preflight --target managed\n" +
			"  kueue-guard preflight --target managed -o json | jq '.checks[] | select(.status == \"fail\")'",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := c.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()); code != preflight.ExitPass {
				return &exitError{code: code, err: fmt.Errorf("preflight: exit %d", code)}
			}
			return nil
		},
	}
	c.AddFlags(cmd.Flags())
	usageErrors(cmd, preflight.ExitError)
	return cmd
}
