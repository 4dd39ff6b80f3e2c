// Package controlplane is the smoke suite of the test control plane: next to
// envtest's kube-apiserver and etcd, the real kube-controller-manager runs each
// controller under its own identity and the real Kueue manager admits jobs through
// its own webhooks. Other suites rely on what it proves.
package controlplane

import (
	"context"
	"testing"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestControlPlane(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Control Plane Suite")
}

var (
	// ctx bounds the suite's control plane processes: it ends in AfterSuite.
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
	kcm    *testenv.Process
	kq     *testenv.Kueue
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(nil, nil)
	Expect(err).NotTo(HaveOccurred())
	kcm, err = env.StartKubeControllerManager(ctx)
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
	kq, err = env.StartKueue(ctx, testenv.KueueOptions{})
	Expect(env.KeepLogsOn(err)).NotTo(HaveOccurred())
	if d, err := env.LogDir(); err == nil {
		GinkgoWriter.Println("control plane logs in", d)
	}
})

var _ = ReportAfterEach(func(r SpecReport) { testenv.ReportFailure(env, r) })

var _ = AfterSuite(func() {
	if kq != nil {
		Expect(kq.Stop()).To(Succeed())
	}
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
