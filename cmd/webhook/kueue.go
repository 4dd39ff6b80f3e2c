package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kueue-guard/kueue-guard/pkg/kueuestate"
)

// newKueueCommand is `kueue-guard kueue`: the admins' Kueue objects kept in
// Git across an uninstall or reinstall of Kueue (which deletes them).
func newKueueCommand() *cobra.Command {
	kueue := &cobra.Command{
		Use:   "kueue",
		Short: "Export, compare and restore the Kueue objects an admin owns (queues, flavors, cohorts, …)",
		Long: "Uninstalling or reinstalling Kueue deletes every Kueue custom resource. These commands keep the ones\n" +
			"admins own — Topology, ResourceFlavor, Cohort, WorkloadPriorityClass, ProvisioningRequestConfig,\n" +
			"MultiKueueCluster, MultiKueueConfig, AdmissionCheck, ClusterQueue, LocalQueue, and under installProfile oss\n" +
			"Kueue's Configuration ConfigMap — as files for Git, and put them back in dependency order.",
	}
	run := func(c *kueuestate.CLI, cmdName string, do func(*kueuestate.CLI, *cobra.Command) int) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			if code := do(c, cmd); code != kueuestate.ExitOK {
				return &exitError{code: code, err: fmt.Errorf("kueue %s: exit %d", cmdName, code)}
			}
			return nil
		}
	}

	export := &kueuestate.CLI{}
	exportCmd := &cobra.Command{
		Use:   "export [--output-dir DIR] [--kubeconfig PATH] [--context NAME] [--config FILE]",
		Short: "Write the cluster's Kueue objects, cleaned for GitOps, to DIR (one file per kind, in apply order) or stdout",
		Long: "Every object of the kinds above, without status, uid, resourceVersion, generation, creationTimestamp,\n" +
			"managedFields, the last-applied annotation, Kueue's finalizers, or any field nobody set (the defaults the\n" +
			"API server filled in, as the object's managedFields tell). Files are named so that kubectl apply -f DIR\n" +
			"applies them in dependency order. Read-only. Exit 0, or 2 when the cluster could not be read.",
		Example:       "  kueue-guard kueue export --output-dir kueue-backup/\n  kueue-guard kueue export --config config.yaml > kueue.yaml",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: run(export, "export", func(c *kueuestate.CLI, cmd *cobra.Command) int {
			return c.Export(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	export.AddFlags(exportCmd.Flags())
	exportCmd.Flags().StringVar(&export.Dir, "output-dir", "", "Directory to write one file per kind into (default: stdout)")
	usageErrors(exportCmd, kueuestate.ExitError)

	diff := &kueuestate.CLI{}
	diffCmd := &cobra.Command{
		Use:   "diff -f DIR [--kubeconfig PATH] [--context NAME]",
		Short: "Show what the live cluster lacks or holds differently from an export; exit 1 when it does",
		Long: "The check to run after reinstalling Kueue and restoring, before letting queued jobs be admitted. Objects\n" +
			"only the cluster has are listed as extra, and do not fail the check. Exit 0 the cluster holds the export,\n" +
			"1 it lacks or differs, 2 the export or the cluster could not be read.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: run(diff, "diff", func(c *kueuestate.CLI, cmd *cobra.Command) int {
			return c.Diff(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	diff.AddFlags(diffCmd.Flags())
	diffCmd.Flags().StringVarP(&diff.Dir, "filename", "f", "", "The directory kueue-guard kueue export wrote")
	usageErrors(diffCmd, kueuestate.ExitError)

	restore := &kueuestate.CLI{}
	restoreCmd := &cobra.Command{
		Use:   "restore -f DIR [--timeout 2m] [--kubeconfig PATH] [--context NAME]",
		Short: "Apply an export server-side in dependency order and wait until its ClusterQueues are active",
		Long: "Applies every object of DIR with server-side apply (field manager kueue-guard), what each kind refers\n" +
			"to first, then waits until every ClusterQueue it holds is active. Exit 0 restored and active, 1 a\n" +
			"ClusterQueue is not active by --timeout (the reason is printed), 2 the export could not be read or applied.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: run(restore, "restore", func(c *kueuestate.CLI, cmd *cobra.Command) int {
			return c.Restore(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	restore.AddFlags(restoreCmd.Flags())
	restoreCmd.Flags().StringVarP(&restore.Dir, "filename", "f", "", "The directory kueue-guard kueue export wrote")
	restoreCmd.Flags().DurationVar(&restore.Timeout, "timeout", 2*time.Minute, "How long to wait for the ClusterQueues to become active")
	usageErrors(restoreCmd, kueuestate.ExitError)

	kueue.AddCommand(exportCmd, diffCmd, restoreCmd)
	return kueue
}
