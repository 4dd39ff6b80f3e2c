package main

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

// usageErrors makes a flag error print "kueue-guard CMD: error" and where
// the usage is, and exit with code (each command's usage exit code).
func usageErrors(cmd *cobra.Command, code int) {
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return &exitError{code: code, err: err}
	})
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return 1
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kueue-guard",
		Short:         "Admission webhook and policy enforcer for Kueue",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(newServeCommand(), newReviewCommand(), newSimulateCommand(), newWhyCommand(), newAuditCommand(), newPreflightCommand(), newKueueCommand(), newPolicyCommand(), newVersionCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "kueue-guard %s (commit %s, %s, %s/%s)\n",
				version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}
