package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
		Entry("two cluster states", "--cluster-state and --live-cluster both", "-f", "x.yaml", "--cluster-state", "s.yaml", "--live-cluster"),
		Entry("--kubeconfig without --live-cluster", "--kubeconfig: only with --live-cluster", "-f", "x.yaml", "--kubeconfig", "k"),
		Entry("--context without --live-cluster", "--context: only with --live-cluster", "-f", "x.yaml", "--context", "c"),
		Entry("--cluster and --user without --live-cluster", "--cluster, --user: only with --live-cluster",
			"-f", "x.yaml", "--cluster", "c", "--user", "u"),
		Entry("a kubeconfig beside a cluster state file", "--kubeconfig: only with --live-cluster",
			"-f", "x.yaml", "--cluster-state", "s.yaml", "--kubeconfig", "k"),
		Entry("an empty --policies", "--policies needs a directory", "-f", "x.yaml", "--policies", ""),
		Entry("a configuration that does not load", `reading configuration file "missing.yaml"`, "-f", "x.yaml", "--config", "missing.yaml"),
		Entry("a cluster state that does not load", "cluster state:\n  missing-state.yaml: no such file or directory", "-f", "x.yaml", "--cluster-state", "missing-state.yaml"),
		Entry("a kubeconfig that does not load", "kubeconfig missing-kubeconfig", "-f", "x.yaml", "--live-cluster", "--kubeconfig", "missing-kubeconfig"),
	)

	It("exits 0 for allowed manifests, warnings included", func() {
		code, out, _ := cli(unlabeledJob, "-f", "-")
		Expect(code).To(Equal(review.ExitAllowed))
		Expect(out).To(ContainSubstring("Result: allowed (exit 0)."))
	})

	It("exits 1 for warnings with --fail-on-warn, naming the objects", func() {
		// The shipped policies warn about a queued Job without a max-exec-time label.
		code, out, _ := cli(queuedJob, "-f", "-", "--policies", shippedPolicies)
		Expect(code).To(Equal(review.ExitAllowed))
		Expect(out).To(ContainSubstring("warn      [kueue_guard.max_exec_time_required]"))

		code, out, errOut := cli(queuedJob, "-f", "-", "--policies", shippedPolicies, "--fail-on-warn")
		Expect(code).To(Equal(review.ExitDenied))
		Expect(out).To(ContainSubstring("Result: warnings (exit 1, --fail-on-warn): Job team/job."))
		Expect(errOut).To(BeEmpty())

		_, out, _ = cli(queuedJob, "-f", "-", "--policies", shippedPolicies, "--fail-on-warn", "-o", "json")
		var rep review.Report
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Result).To(Equal(review.ResultWarned))
		Expect(rep.ExitCode).To(Equal(review.ExitDenied))

		// JUnit agrees: the warned object's test case fails, so CI does not fail
		// with every case green.
		_, out, _ = cli(queuedJob, "-f", "-", "--policies", shippedPolicies, "--fail-on-warn", "-o", "junit")
		Expect(out).To(ContainSubstring(`failures="1"`))
		Expect(out).To(ContainSubstring(`type="warned"`))
		_, out, _ = cli(queuedJob, "-f", "-", "--policies", shippedPolicies, "-o", "junit")
		Expect(out).NotTo(ContainSubstring(`type="warned"`))

		code, out, _ = cli(queuedJob, "-f", "-", "--fail-on-warn")
		Expect(code).To(Equal(review.ExitAllowed), "no warnings, nothing to fail on")
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
		Expect(errOut).To(ContainSubstring("broken.yaml: document 2, line 25: invalid YAML"))
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

// onLaptop makes the spec run as on a machine with no kubeconfig: HOME is an
// empty directory, KUBECONFIG is unset, and client-go's ~/.kube/config (which it
// computes from HOME once, at start-up) is the new HOME's. Everything is restored
// after the spec. It returns the new HOME.
func onLaptop() string {
	GinkgoHelper()
	home := GinkgoT().TempDir()
	for _, k := range []string{"HOME", "KUBECONFIG"} {
		old, had := os.LookupEnv(k)
		DeferCleanup(func() {
			if had {
				Expect(os.Setenv(k, old)).To(Succeed())
			} else {
				Expect(os.Unsetenv(k)).To(Succeed())
			}
		})
	}
	Expect(os.Setenv("HOME", home)).To(Succeed())
	Expect(os.Unsetenv("KUBECONFIG")).To(Succeed())
	oldHomeFile := clientcmd.RecommendedHomeFile
	DeferCleanup(func() { clientcmd.RecommendedHomeFile = oldHomeFile })
	clientcmd.RecommendedHomeFile = filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
	return home
}

// kubeconfig writes a kubeconfig whose contexts name servers nobody listens on,
// so that the error says which one was chosen.
func kubeconfig(path, current string, servers map[string]string) {
	GinkgoHelper()
	cfg := clientcmdapi.NewConfig()
	for name, server := range servers {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = current
	Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
}

var _ = Describe("the review command line on a laptop", Serial, func() {
	It("reviews with a configuration that names no policy directory, without /etc/kueue-guard or ~/.kube", func() {
		home := onLaptop()
		Expect(filepath.Join(home, ".kube")).NotTo(BeAnExistingFile())
		cfg := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(cfg, []byte("apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\ninstallProfile: managed\n"), 0o644)).To(Succeed())

		code, out, errOut := cli(queuedJob, "-f", "-", "--config", cfg, "-o", "json")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(review.ExitAllowed))
		var rep review.Report
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Context.PolicyDirectory).To(BeEmpty(), "not the server's default, %s", config.DefaultPolicyDirectory)
		Expect(rep.Context.ClusterState).To(Equal(review.StateNone))
		Expect(filepath.Join(home, ".kube")).NotTo(BeAnExistingFile(), "nothing was read or written for a cluster")
	})

	It("says there is no kubeconfig when asked for the live cluster without one", func() {
		onLaptop()
		code, out, errOut := cli(queuedJob, "-f", "-", "--live-cluster")
		Expect(code).To(Equal(review.ExitInputError))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(ContainSubstring("--live-cluster: no kubeconfig: give --kubeconfig, set KUBECONFIG, or create ~/.kube/config"))
	})

	It("finds the live cluster as kubectl does: --kubeconfig, else KUBECONFIG, else ~/.kube/config; --context and --cluster", func() {
		home := onLaptop()
		dir := GinkgoT().TempDir()
		kubeconfig(filepath.Join(home, ".kube", "config"), "home", map[string]string{"home": "https://127.0.0.1:1"})
		kubeconfig(filepath.Join(dir, "env"), "env", map[string]string{"env": "https://127.0.0.1:2", "other": "https://127.0.0.1:3"})
		kubeconfig(filepath.Join(dir, "flag"), "flag", map[string]string{"flag": "https://127.0.0.1:4"})
		server := func(args ...string) string {
			GinkgoHelper()
			code, _, errOut := cli(queuedJob, append([]string{"-f", "-", "--live-cluster"}, args...)...)
			Expect(code).To(Equal(review.ExitInputError))
			m := regexp.MustCompile(`reading the cluster state from (\S+):`).FindStringSubmatch(errOut)
			Expect(m).NotTo(BeNil(), errOut)
			return m[1]
		}
		Expect(server()).To(Equal("https://127.0.0.1:1"))
		Expect(os.Setenv("KUBECONFIG", filepath.Join(dir, "env"))).To(Succeed())
		Expect(server()).To(Equal("https://127.0.0.1:2"))
		Expect(server("--context", "other")).To(Equal("https://127.0.0.1:3"))
		Expect(server("--cluster", "other")).To(Equal("https://127.0.0.1:3"))
		Expect(server("--kubeconfig", filepath.Join(dir, "flag"))).To(Equal("https://127.0.0.1:4"))

		code, _, errOut := cli(queuedJob, "-f", "-", "--live-cluster", "--context", "nowhere")
		Expect(code).To(Equal(review.ExitInputError))
		Expect(errOut).To(ContainSubstring(`kubeconfig: context "nowhere" does not exist`))
	})
})
