package review

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// goldenDir holds the expected output of each case; docs/review.md quotes them.
var goldenDir = filepath.Join("testdata", "golden")

// corpusArgs review the whole corpus as the README runs it: the test
// configuration (whose policies.directory is the repository's policies/) and
// the cluster state.
var corpusArgs = []string{"-f", "testdata/corpus", "--config", "testdata/config.yaml", "--cluster-state", "testdata/cluster-state.yaml"}

// goldenCase is one command line and what it must print and return.
type goldenCase struct {
	file  string
	stdin string
	args  []string
	code  int
}

func with(base []string, more ...string) []string {
	return append(append([]string{}, base...), more...)
}

func stdinOf(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

var goldenCases = []goldenCase{
	{file: "corpus.txt", args: corpusArgs, code: review.ExitDenied},
	{file: "corpus-explain.txt", args: with(corpusArgs, "--explain", "--show-mutations", "patches"), code: review.ExitDenied},
	{file: "corpus.json", args: with(corpusArgs, "-o", "json", "--explain"), code: review.ExitDenied},
	{file: "corpus.junit.xml", args: with(corpusArgs, "-o", "junit"), code: review.ExitDenied},
	{file: "corpus.sarif.json", args: with(corpusArgs, "-o", "sarif"), code: review.ExitDenied},
	{file: "manifests.txt", args: []string{"-f", "testdata/corpus/batch/sample-job.yaml", "-f", "testdata/corpus/batch/sample-cronjob.yaml",
		"--config", "testdata/config.yaml", "--cluster-state", "testdata/cluster-state.yaml", "--show-mutations", "manifests"}, code: review.ExitAllowed},
	{file: "fail-on-warn.txt", args: []string{"-f", "testdata/corpus/batch/sample-job.yaml", "--config", "testdata/config.yaml",
		"--cluster-state", "testdata/cluster-state.yaml", "--fail-on-warn"}, code: review.ExitDenied},
	{file: "stdin.txt", stdin: stdinOf("testdata/corpus/helm/rendered.yaml"),
		args: []string{"-f", "-", "--config", "testdata/config.yaml", "--cluster-state", "testdata/cluster-state.yaml"}, code: review.ExitAllowed},
	{file: "no-state.txt", args: []string{"-f", "testdata/corpus/batch", "-f", "testdata/corpus/new-team", "--config", "testdata/config.yaml", "--explain"},
		code: review.ExitDenied},
	{file: "no-state.json", args: []string{"-f", "testdata/corpus/batch", "-f", "testdata/corpus/new-team", "--config", "testdata/config.yaml", "-o", "json"},
		code: review.ExitDenied},
	{file: "invalid.txt", args: []string{"-f", "testdata/invalid", "--config", "testdata/config.yaml", "--cluster-state", "testdata/cluster-state.yaml"},
		code: review.ExitInputError},
	{file: "invalid.json", args: []string{"-f", "testdata/invalid", "--config", "testdata/config.yaml", "--cluster-state", "testdata/cluster-state.yaml", "-o", "json"},
		code: review.ExitInputError},
	{file: "invalid.junit.xml", args: []string{"-f", "testdata/invalid", "--config", "testdata/config.yaml", "--cluster-state", "testdata/cluster-state.yaml", "-o", "junit"},
		code: review.ExitInputError},
	{file: "invalid.sarif.json", args: []string{"-f", "testdata/invalid", "--config", "testdata/config.yaml", "--cluster-state", "testdata/cluster-state.yaml", "-o", "sarif"},
		code: review.ExitInputError},
}

// runCLI runs the review command line as `kueue-guard review` would.
func runCLI(stdin string, args []string) (int, []byte, string) {
	GinkgoHelper()
	c := &review.CLI{Version: "test"}
	fs := pflag.NewFlagSet("review", pflag.ContinueOnError)
	c.AddFlags(fs)
	Expect(fs.Parse(args)).To(Succeed())
	var out, errOut bytes.Buffer
	code, _ := c.Run(context.Background(), fs, fs.Args(), strings.NewReader(stdin), &out, &errOut)
	return code, out.Bytes(), errOut.String()
}

// golden compares output with a golden file, or rewrites it with -update.
func golden(name string, got []byte) {
	GinkgoHelper()
	path := filepath.Join(goldenDir, name)
	if *update {
		Expect(os.MkdirAll(goldenDir, 0o755)).To(Succeed())
		Expect(os.WriteFile(path, got, 0o644)).To(Succeed())
		return
	}
	want, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "golden file missing: run go test ./test/review/ -update")
	Expect(string(got)).To(Equal(string(want)), "output differs from %s: run go test ./test/review/ -update and review the diff", path)
}

var _ = Describe("the review's output", func() {
	for _, gc := range goldenCases {
		It("matches "+gc.file+" and exits "+strconv.Itoa(gc.code), func() {
			code, out, errOut := runCLI(gc.stdin, gc.args)
			Expect(code).To(Equal(gc.code), "stderr: %s", errOut)
			if gc.code != review.ExitInputError {
				Expect(errOut).To(BeEmpty())
			}
			golden(gc.file, out)
		})
	}

	It("is the same on every run (no map order or timing leaks into it)", func() {
		_, first, _ := runCLI("", with(corpusArgs, "-o", "json", "--explain", "--show-mutations", "manifests"))
		for range 3 {
			_, again, _ := runCLI("", with(corpusArgs, "-o", "json", "--explain", "--show-mutations", "manifests"))
			Expect(string(again)).To(Equal(string(first)))
		}
	})

	It("reviews a corpus of every kind the issue lists", func() {
		ms, errs := review.Read([]string{"testdata/corpus"}, nil)
		Expect(errs).To(BeEmpty())
		kinds := map[string]bool{}
		for _, m := range ms {
			kinds[m.Object.GetKind()] = true
		}
		for _, k := range []string{"Job", "CronJob", "JobSet", "RayJob", "RayCluster", "MPIJob", "PyTorchJob", "TrainJob",
			"AppWrapper", "LeaderWorkerSet", "Deployment", "StatefulSet", "Pod"} {
			Expect(kinds).To(HaveKey(k))
		}
	})
})
