package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// cli parses a command line like cobra would and runs it.
func cli(stdin string, args ...string) (code int, stdout, stderr string) {
	GinkgoHelper()
	c := &review.CLI{Version: "test"}
	fs := pflag.NewFlagSet("review", pflag.ContinueOnError)
	c.AddFlags(fs)
	Expect(fs.Parse(args)).To(Succeed())
	var out, errOut bytes.Buffer
	code, err := c.Run(context.Background(), fs, fs.Args(), strings.NewReader(stdin), &out, &errOut)
	if code == review.ExitAllowed {
		Expect(err).NotTo(HaveOccurred())
	} else {
		Expect(err).To(HaveOccurred())
	}
	return code, out.String(), errOut.String()
}

const corpusState = "../../test/review/testdata/cluster-state.yaml"

var _ = Describe("the review command line", func() {
	DescribeTable("refuses command lines it cannot run, with exit code 2",
		func(want string, args ...string) {
			code, out, errOut := cli("", args...)
			Expect(code).To(Equal(review.ExitInputError))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("no manifests", "no manifests: give -f PATH"),
		Entry("an unknown format", `--output "yaml": use one of text, json, junit, sarif`, "-f", "x.yaml", "-o", "yaml"),
		Entry("an unknown --show-mutations", `--show-mutations "diff"`, "-f", "x.yaml", "--show-mutations", "diff"),
		Entry("two cluster states", "--cluster-state and --kubeconfig both", "-f", "x.yaml", "--cluster-state", "s.yaml", "--kubeconfig", "k"),
		Entry("--context without --kubeconfig", "--context needs --kubeconfig", "-f", "x.yaml", "--context", "c"),
		Entry("an empty --policies", "--policies needs a directory", "-f", "x.yaml", "--policies", ""),
		Entry("a configuration that does not load", `reading configuration file "missing.yaml"`, "-f", "x.yaml", "--config", "missing.yaml"),
		Entry("a cluster state that does not load", "cluster state:\n  missing-state.yaml: no such file or directory", "-f", "x.yaml", "--cluster-state", "missing-state.yaml"),
		Entry("a kubeconfig that does not load", "kubeconfig missing-kubeconfig", "-f", "x.yaml", "--kubeconfig", "missing-kubeconfig"),
	)

	It("exits 0 for allowed manifests, warnings included", func() {
		code, out, _ := cli(unlabeledJob, "-f", "-")
		Expect(code).To(Equal(review.ExitAllowed))
		Expect(out).To(ContainSubstring("Result: allowed (exit 0)."))
	})

	It("exits 1 when an object is denied", func() {
		code, out, errOut := cli("", "-f", "../../test/review/testdata/corpus/kubeflow/pytorchjob.yaml", "--cluster-state", corpusState)
		Expect(code).To(Equal(review.ExitDenied))
		Expect(out).To(ContainSubstring("[kueue_guard.unsupported_integration]"))
		Expect(errOut).To(BeEmpty())
	})

	It("exits 2 for input it cannot read, still reporting the rest", func() {
		code, out, errOut := cli("", "-f", "../../test/review/testdata/invalid", "-o", "json")
		Expect(code).To(Equal(review.ExitInputError))
		var rep review.Report
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Summary.Objects).To(Equal(1))
		Expect(rep.Errors).To(HaveLen(4))
		Expect(errOut).To(ContainSubstring("broken.yaml: document 2, line 24: invalid YAML"))
	})

	It("takes the policy directory from --config unless --policies is given", func() {
		dir := GinkgoT().TempDir()
		abs, err := filepath.Abs(shippedPolicies)
		Expect(err).NotTo(HaveOccurred())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, []byte("apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\npolicies:\n  directory: "+abs+"\n"), 0o644)).To(Succeed())
		_, out, _ := cli(queuedJob, "-f", "-", "--config", cfg, "-o", "json")
		var rep review.Report
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Context.PolicyDirectory).To(Equal(abs))
		Expect(rep.Context.Policies).To(ContainElement("kueue_guard.max_gpus_per_workload"))

		empty := GinkgoT().TempDir()
		_, out, _ = cli(queuedJob, "-f", "-", "--config", cfg, "--policies", empty, "-o", "json")
		rep = review.Report{}
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Context.PolicyDirectory).To(Equal(empty))
		Expect(rep.Context.Policies).To(BeEmpty())

		_, out, _ = cli(queuedJob, "-f", "-", "-o", "json")
		rep = review.Report{}
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Context.PolicyDirectory).To(BeEmpty(), "without --config, no policies (not the server's default directory)")
	})

	It("colours text only on a terminal (never into a pipe or file)", func() {
		_, out, _ := cli(queuedJob, "-f", "-")
		Expect(out).NotTo(ContainSubstring("\x1b["))
		c := &review.CLI{Files: []string{"-"}, Output: review.FormatText, Color: true}
		var buf bytes.Buffer
		_, _ = c.Run(context.Background(), nil, nil, strings.NewReader(queuedJob), &buf, &bytes.Buffer{})
		Expect(buf.String()).To(ContainSubstring("\x1b[1m"))
	})

	It("reviews as --as and --as-group", func() {
		_, out, _ := cli(queuedJob, "-f", "-", "--as", "alice", "--as-group", "a", "--as-group", "b", "-o", "json")
		var rep review.Report
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Context.User).To(Equal(review.User{Username: "alice", Groups: []string{"a", "b", review.AuthenticatedGroup}}))
	})
})
