package main

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// defaultPolicyTestDir is where the shipped policies live in the repository.
const defaultPolicyTestDir = "policies/"

// newPolicyCommand groups the commands that work on a policy directory offline.
func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Work with Rego policy directories",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newPolicyTestCommand(), newPolicyAdmissionCommand())
	return cmd
}

// newPolicyTestCommand runs a policy directory's Rego tests with OPA's tester,
// compiled exactly as the server compiles them, so no opa binary is needed, and
// reports them with OPA's reporters (as opa test --format pretty|json, and
// --coverage). Exit codes: 0 all tests pass, 1 a test failed (or none exist), 2
// the directory cannot be read or compiled, or a flag is wrong.
func newPolicyTestCommand() *cobra.Command {
	var o policies.TestOptions
	cmd := &cobra.Command{
		Use:   "test [DIR]",
		Short: "Run the Rego tests (_test.rego) of a policy directory",
		Long: "Run the test_* rules of every .rego file under DIR (default " + defaultPolicyTestDir + ") with the\n" +
			"data files, the same capabilities, strict built-in errors and input schema (schema.input)\n" +
			"as the server, and report them as opa test does. --coverage adds which lines of the\n" +
			"policies the tests evaluate (with --format json: OPA's coverage report instead of the\n" +
			"results, when every test passes).\n\n" +
			"Exit codes: 0 all tests pass, 1 a test failed or there is none, 2 DIR cannot be read or\n" +
			"compiled.",
		Args:         cobra.MaximumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := defaultPolicyTestDir
			if len(args) == 1 {
				dir = args[0]
			}
			passed, err := policies.RunTests(cmd.Context(), dir, cmd.OutOrStdout(), o)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if !passed {
				return &exitError{code: 1, err: errors.New("policy tests failed")}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.Run, "run", "r", "", "Run only tests whose full name (data.pkg.test_x) matches this regular expression")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Second, "Timeout of each test")
	cmd.Flags().BoolVarP(&o.Verbose, "verbose", "v", false, "List every test with its print() output, and trace the failing ones")
	cmd.Flags().StringVarP(&o.Format, "format", "f", policies.TestFormatPretty,
		"Report format: "+policies.TestFormatPretty+" or "+policies.TestFormatJSON)
	cmd.Flags().
		StringSliceVar(&o.AllowBuiltins, "allow-builtin", nil, "A built-in the policies may call beyond the default ones, as policies.allowBuiltins allows it in the server (repeatable): "+strings.Join(policies.OptInBuiltins(), ", "))
	cmd.Flags().BoolVarP(&o.Coverage, "coverage", "c", false, "Report which lines of the policies (not of the tests) the tests evaluate")
	return cmd
}
