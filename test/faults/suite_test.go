// Package faults proves what holds when something goes wrong around
// kueue-guard — a rollout's SIGTERM first — on the real control plane, with the
// numbers docs/reliability.md reports: what was tried, what held, requests sent
// and failed.
package faults

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/test/testenv"
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Faults Suite")
}

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
)

// One control plane for the suite; each spec starts its own server, since the
// faults stop it.
var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(nil, nil)
	Expect(err).NotTo(HaveOccurred())
	_, stderr, err := env.Kubectl(nil, "create", "namespace", testenv.ServerNamespace)
	Expect(err).NotTo(HaveOccurred(), stderr)
})

var _ = ReportAfterEach(func(r SpecReport) { testenv.ReportFailure(env, r) })

var _ = AfterSuite(func() {
	cancel()
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
