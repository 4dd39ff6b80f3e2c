// Package audit_test runs `kueue-guard audit` against a real kube-apiserver
// holding workloads created before the policies that judge them, as a platform
// engineer would before a rollout.
package audit_test

import (
	"context"
	"testing"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestAudit(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Audit Suite")
}

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
)

// One control plane for the suite, without webhooks: the workloads are
// created as if before kueue-guard was installed.
var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(nil, nil)
	Expect(err).NotTo(HaveOccurred())
})

var _ = ReportAfterEach(func(r SpecReport) { testenv.ReportFailure(env, r) })

var _ = AfterSuite(func() {
	cancel()
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
