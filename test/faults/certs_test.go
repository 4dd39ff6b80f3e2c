package faults

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"
)

// servedCert is the fingerprint of the certificate a new TLS handshake with
// addr gets.
func servedCert(addr string) string {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // only the presented certificate is read
	if err != nil {
		return "error: " + err.Error()
	}
	defer conn.Close()
	sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].Raw)
	return fmt.Sprintf("%x", sum[:8])
}

// cert-manager renews the serving certificate by rewriting the Secret's files
// in place: the server must take the new one for new handshakes, without a
// restart and without failing a request on the connections it already has.
var _ = Describe("the serving certificate replaced under steady load", func() {
	It("is used for new handshakes within seconds, without a restart or a failed request", func() {
		dir := GinkgoT().TempDir()
		o := env.WebhookInstallOptions
		ips, names := []net.IP{net.ParseIP(o.LocalServingHost)}, []string{"localhost"}
		_, err := testenv.WriteServingCert(dir, ips, names)
		Expect(err).NotTo(HaveOccurred())
		cfg := config.Default()
		cfg.Policies.Directory = GinkgoT().TempDir()
		srv, err := env.StartServerOptions(ctx, env.Config, cfg, func(so *server.Options) { so.CertDir = dir })
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Stop)

		addr := net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
		hook := "https://" + addr + webhookconfig.MutateWorkloadsPath
		l := &load{pause: 2 * time.Millisecond}
		wait := l.run(hook, srv.ProbeAddr, 2, 0)
		DeferCleanup(func() { l.stop.Store(true); wait() })
		time.Sleep(time.Second)

		old := servedCert(addr)
		Expect(old).NotTo(HavePrefix("error"))
		start := time.Now()
		_, err = testenv.WriteServingCert(dir, ips, names)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return servedCert(addr) }).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).
			ShouldNot(Or(Equal(old), HavePrefix("error")))
		pickedUp := time.Since(start)
		atSwap := l.sent.Load()
		Eventually(l.sent.Load).WithTimeout(10 * time.Second).Should(BeNumerically(">", atSwap+200))
		l.stop.Store(true)
		wait()

		AddReportEntry("certificate replaced under load", fmt.Sprintf(
			"new handshakes got the new certificate %v after it was written; %d AdmissionReviews sent, %d after the swap, %d failed %v; the server never restarted",
			pickedUp.Round(time.Millisecond), l.sent.Load(), l.sent.Load()-atSwap, l.failed.Load(), l.errors()))
		Expect(l.failed.Load()).To(BeZero(), "failed: %v", l.errors())
		Consistently(srv.Done()).WithTimeout(100*time.Millisecond).ShouldNot(Receive(), "no restart")
	})
})
