package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	simState = "../../examples/simulate/cluster-state.yaml"
	simJobs  = "../../examples/simulate/jobs.yaml"
)

// simulateCLI parses a command line like cobra would and runs simulate.
func simulateCLI(args ...string) (code int, stdout, stderr string) {
	GinkgoHelper()
	c := &review.SimulateCLI{}
	fs := pflag.NewFlagSet("simulate", pflag.ContinueOnError)
	c.AddFlags(fs)
	Expect(fs.Parse(args)).To(Succeed())
	var out, errOut bytes.Buffer
	code, err := c.Run(context.Background(), fs, fs.Args(), strings.NewReader(""), &out, &errOut)
	Expect(err != nil).To(Equal(code != review.ExitAdmittedNow), "error %v with exit code %d", err, code)
	return code, out.String(), errOut.String()
}

// oneJob writes the jobs example's document with the Job of that name.
func oneJob(name string) string {
	GinkgoHelper()
	data, err := os.ReadFile(simJobs)
	Expect(err).NotTo(HaveOccurred())
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		if strings.Contains(doc, "name: "+name+"\n") {
			path := filepath.Join(GinkgoT().TempDir(), name+".yaml")
			Expect(os.WriteFile(path, []byte(doc), 0o600)).To(Succeed())
			return path
		}
	}
	Fail("no Job " + name)
	return ""
}

var _ = Describe("the simulate command line", func() {
	DescribeTable("exits with the worst verdict's code",
		func(job string, code int, result string, lines ...string) {
			got, out, _ := simulateCLI("-f", oneJob(job), "--cluster-state", simState)
			Expect(got).To(Equal(code), out)
			for _, l := range append(lines, "Result: "+result) {
				Expect(out).To(ContainSubstring(l))
			}
		},
		Entry("0 when admitted now", "debug-2gpu", review.ExitAdmittedNow, review.ResultNow,
			"Kueue: admitted now in ClusterQueue cq-gpu", "flavors: pod set main ×2: nvidia.com/gpu → a100"),
		Entry("3 when it would wait", "sweep-4gpu", review.ExitWouldWait, review.ResultWait,
			"missing: nvidia.com/gpu of flavor a100: needs 4, 2 available", "ahead: 1 pending in ClusterQueue cq-gpu"),
		Entry("1 when never admitted", "pretrain-16gpu", review.ExitNeverOrDeny, review.ResultNever,
			"ExceedsMaxQuota: ", "> maximum capacity (12)"),
	)

	It("gives each workload's verdict in JSON, the worst deciding the result", func() {
		code, out, _ := simulateCLI("-f", simJobs, "--cluster-state", simState, "-o", "json")
		Expect(code).To(Equal(review.ExitNeverOrDeny))
		rep := &review.Report{}
		Expect(json.Unmarshal([]byte(out), rep)).To(Succeed())
		Expect(rep.Kind).To(Equal(review.SimulationKind))
		Expect(rep.Result).To(Equal(review.ResultNever))
		var verdicts []string
		for _, o := range rep.Objects {
			verdicts = append(verdicts, string(o.Simulation.Verdict))
		}
		Expect(verdicts).To(Equal([]string{"now", "wait", "never"}))
	})

	DescribeTable("refuses what it cannot run, with exit code 2",
		func(want string, args ...string) {
			code, _, errOut := simulateCLI(args...)
			Expect(code).To(Equal(review.ExitInputError))
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("no cluster", "simulate needs the cluster", "-f", simJobs),
		Entry("a format it does not write", `--output "sarif"`, "-f", simJobs, "--cluster-state", simState, "-o", "sarif"),
		Entry("a manifest that does not exist", "/nonexistent.yaml: no such file or directory", "-f", "/nonexistent.yaml", "--cluster-state", simState),
	)
})
