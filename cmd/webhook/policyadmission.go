package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/pkg/config"
)

// newPolicyAdmissionCommand prints the admission policies the API server
// evaluates itself (the CEL twins of the built-in rules, and the default-queue
// MutatingAdmissionPolicy), their parameters filled in from a configuration
// file: the same policies the chart renders, for installs without Helm.
// Exit codes: 0 printed, 2 the configuration cannot be read or a flag is wrong.
func newPolicyAdmissionCommand() *cobra.Command {
	in := chart.TwinInputs{FullName: chart.DefaultReleaseName, Namespace: chart.DefaultNamespace,
		MaxDeletionGraceSeconds: admission.DefaultMaxDeletionGraceSeconds, Mutating: true}
	var configFile string
	cmd := &cobra.Command{
		Use:   "admission [--config FILE] [--namespace NS] [--name NAME] [--mutating=false]",
		Short: "Print the ValidatingAdmissionPolicies and MutatingAdmissionPolicies the API server enforces itself",
		Long: "Print, as YAML, the admission policies the chart installs (apiServerRules, kueueWebhookPolicy,\n" +
			"podDeletionGracePolicy) with their parameters taken from the configuration file, so that an\n" +
			"install without Helm applies the same policies: they hold while no kueue-guard replica answers.\n" +
			"--mutating=false leaves out the MutatingAdmissionPolicy (clusters before Kubernetes 1.36).\n\n" +
			"Exit codes: 0 printed, 2 the configuration cannot be read.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := config.Default()
			if configFile != "" {
				var err error
				if cfg, err = config.Load(configFile); err != nil {
					return &exitError{code: 2, err: err}
				}
			}
			in.Config = cfg
			objs, err := chart.RenderTwins(in)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			for _, o := range objs {
				b, err := yaml.Marshal(o)
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "---\n%s", b)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "kueue-guard configuration file (default: the built-in defaults)")
	f.StringVarP(&in.Namespace, "namespace", "n", in.Namespace, "kueue-guard's own namespace (the workload webhooks skip it)")
	f.StringVar(&in.FullName, "name", in.FullName, "Prefix of the policies' names")
	f.StringSliceVar(&in.ExcludeNamespaces, "exclude-namespaces", nil, "More namespaces the workload webhooks skip")
	f.StringSliceVar(&in.ExternalFrameworks, "kueue-external-frameworks", nil,
		"Kueue's integrations.externalFrameworks (Kind.version.group)")
	f.IntVar(&in.MaxDeletionGraceSeconds, "max-deletion-grace-seconds", in.MaxDeletionGraceSeconds,
		"The longest grace period a pod DELETE or eviction may ask for")
	f.BoolVar(&in.Mutating, "mutating", in.Mutating, "Include the MutatingAdmissionPolicy (Kubernetes 1.36 and later)")
	return cmd
}
