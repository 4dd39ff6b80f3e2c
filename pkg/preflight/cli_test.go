package preflight_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	pf "github.com/kueue-guard/kueue-guard/pkg/preflight"
	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the preflight command", func() {
	run := func(c *pf.CLI) (int, string, string) {
		var out, errOut bytes.Buffer
		code := c.Run(context.Background(), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	It("refuses a missing or unknown target and an unknown output, exit 2", func() {
		code, _, errOut := run(&pf.CLI{Output: pf.FormatText})
		Expect(code).To(Equal(pf.ExitError))
		Expect(errOut).To(ContainSubstring("--target is required: managed or oss"))
		code, _, errOut = run(&pf.CLI{Target: "aks", Output: pf.FormatText})
		Expect(code).To(Equal(pf.ExitError))
		Expect(errOut).To(ContainSubstring(`--target "aks": must be managed or oss`))
		code, _, errOut = run(&pf.CLI{Target: "managed", Output: "yaml"})
		Expect(code).To(Equal(pf.ExitError))
		Expect(errOut).To(ContainSubstring(`-o "yaml": must be one of text, json`))
	})

	It("says which checks could not be made when the API server does not answer, exit 2", func() {
		// A port nothing listens on: the API server is down.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed())
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: down, cluster: {server: "http://%s"}}]
users: [{name: admin, user: {token: t}}]
contexts: [{name: down, context: {cluster: down, user: admin}}]
current-context: down
`, addr), 0o600)).To(Succeed())
		kube := review.NewKubeFlags()
		*kube.KubeConfig = kubeconfig
		code, out, _ := run(&pf.CLI{Kube: kube, Target: "managed", Output: pf.FormatText})
		Expect(code).To(Equal(pf.ExitError), out)
		Expect(out).To(ContainSubstring("ERROR kubernetes-version"))
		Expect(out).To(ContainSubstring("could not read the API server's version"))
		Expect(out).To(ContainSubstring("connection refused"))
		Expect(out).To(ContainSubstring("result: ERROR (0 passed, 7 could not be checked)"))
	})
})
