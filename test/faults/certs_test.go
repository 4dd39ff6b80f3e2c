package faults

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	return hex.EncodeToString(sum[:8])
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
		cfg := testenv.ConfigWithoutKueue()
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

// Nothing but the NetworkPolicy restricts who may call the webhook port; with
// --client-ca-file, a handshake completes only with a caller presenting a
// certificate the bundle signed: the API server, configured to present one.
var _ = Describe("the webhook port with --client-ca-file", Ordered, func() {
	var (
		caFile, addr string
		c            client.Client
		warned       *testenv.Warnings
		ns           string
	)
	// post sends an AdmissionReview straight to the webhook port with the
	// given client certificate (none when certDir is empty).
	post := func(certDir string) error {
		tc := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // the caller's side is under test
		if certDir != "" {
			cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
			Expect(err).NotTo(HaveOccurred())
			tc.Certificates = []tls.Certificate{cert}
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
		return post(hc, "https://"+addr+webhookconfig.MutateWorkloadsPath, review())
	}
	// viaAPIServer dry-runs a queued Job through the API server and returns
	// kueue-guard's warnings: none when the API server could not reach it
	// (the mutating webhook fails open; the validating one would refuse).
	viaAPIServer := func() (string, error) {
		err := c.Create(ctx, fixtures.Job(ns, "j").Queue("q").Obj(), client.DryRunAll)
		return warned.Take(), err
	}

	BeforeAll(func() {
		Expect(env.WebhookClientCA).NotTo(BeEmpty(), "the suite's API server presents a client certificate")
		caFile = filepath.Join(GinkgoT().TempDir(), "client-ca.crt")
		Expect(os.WriteFile(caFile, env.WebhookClientCA, 0o644)).To(Succeed())
		cfg := testenv.ConfigWithoutKueue()
		cfg.Policies.Directory = GinkgoT().TempDir()
		srv, err := env.StartServerOptions(ctx, env.Config, cfg, func(so *server.Options) { so.ClientCAFile = caFile })
		Expect(err).NotTo(HaveOccurred(), "ready: the readiness check's own handshake is not refused")
		DeferCleanup(srv.Stop)
		o := env.WebhookInstallOptions
		addr = net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))

		c, warned, ns = warnedClient("client-ca-")
	})

	It("admits the API server's calls, which present its client certificate", func() {
		Eventually(viaAPIServer).WithTimeout(10*time.Second).
			Should(ContainSubstring(`LocalQueue "q"`), "kueue-guard answered the API server (with Kueue installed or not, its warning names the queue)")
	})

	It("refuses a caller without a certificate, and one with a certificate another CA signed", func() {
		Expect(post("")).To(MatchError(ContainSubstring("certificate required")))
		other := GinkgoT().TempDir()
		_, err := testenv.WriteClientCert(other, "kube-apiserver-webhook-client")
		Expect(err).NotTo(HaveOccurred())
		Expect(post(other)).To(MatchError(ContainSubstring("unknown certificate authority")), "the same name, signed by another CA")
	})

	It("takes a rotated bundle for new handshakes without a restart, and keeps the last good one over a bad file", func() {
		// Connections already made stay up, as with a serving certificate
		// rotation: the API server keeps its connections alive.
		rotate := func(commonName string) string {
			dir := GinkgoT().TempDir()
			ca, err := testenv.WriteClientCert(dir, commonName)
			Expect(err).NotTo(HaveOccurred())
			Expect(post(dir)).To(HaveOccurred(), "not trusted yet")
			Expect(os.WriteFile(caFile, ca, 0o644)).To(Succeed())
			Eventually(func() error { return post(dir) }).WithTimeout(10 * time.Second).Should(Succeed())
			return dir
		}
		first := rotate("first")
		second := rotate("second")
		Expect(post(first)).To(MatchError(ContainSubstring("unknown certificate authority")), "the replaced CA is no longer trusted")

		Expect(os.WriteFile(caFile, []byte("not a certificate\n"), 0o644)).To(Succeed())
		Consistently(func() error { return post(second) }).WithTimeout(time.Second).Should(Succeed(), "a bad bundle keeps the last good one")

		Expect(os.WriteFile(caFile, env.WebhookClientCA, 0o644)).To(Succeed())
		Eventually(func() error { return post(second) }).WithTimeout(10 * time.Second).Should(HaveOccurred())
		Expect(viaAPIServer()).NotTo(BeEmpty(), "the API server is trusted again")
	})
})
