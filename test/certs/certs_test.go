// Package certs proves --manage-certs (the chart's certManager.enabled=false) on a
// real API server: the server fills its Secret with a CA and a serving
// certificate for the webhook Service, injects the CA into its webhook
// configurations, and serves TLS with that certificate.
package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCerts(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Managed certificates Suite")
}

const (
	ns          = "kueue-guard-system"
	secretName  = "kueue-guard-tls"
	serviceName = "kueue-guard-webhook"
	mutating    = "certs-test-mutating"
	validating  = "certs-test-validating"
)

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
)

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// webhookOnNothing is a webhook that matches no real resource: it only gives the
// rotator a configuration to inject its CA into.
func clientConfig() admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: ns, Name: serviceName, Path: new("/validate-workloads")}}
}

var nothing = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule: admissionregistrationv1.Rule{APIGroups: []string{"certs.test.kueue-guard.io"}, APIVersions: []string{"v1"},
		Resources: []string{"nothing"}},
}}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(nil, nil)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	cancel()
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

var _ = Describe("--manage-certs", func() {
	It("issues the serving certificate, injects the CA and serves with it", func() {
		c := env.Client
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		// The chart creates the Secret empty; the server fills it.
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}})).To(Succeed())
		none := admissionregistrationv1.SideEffectClassNone
		Expect(c.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: mutating},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.certs.kueue-guard.io", ClientConfig: clientConfig(),
				Rules: nothing, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}},
		})).To(Succeed())
		Expect(c.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: validating},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.certs.kueue-guard.io", ClientConfig: clientConfig(),
				Rules: nothing, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}},
		})).To(Succeed())

		certDir := GinkgoT().TempDir()
		policyDir := GinkgoT().TempDir()
		cfg := testenv.ConfigWithoutKueue()
		cfg.Policies.Directory = policyDir
		port, probe := freePort(), freePort()
		srv, err := server.New(ctx, server.Options{
			Config: cfg, RESTConfig: env.Config, Namespace: ns, CertDir: certDir,
			WebhookHost: "127.0.0.1", WebhookPort: port, TLSMinVersion: tls.VersionTLS13,
			MetricsBindAddress: "0", HealthProbeBindAddress: "127.0.0.1:" + strconv.Itoa(probe),
			ShutdownTimeout: 5 * time.Second, Logger: logf.FromContext(ctx),
			ManageCerts: true, CertSecretName: secretName, WebhookServiceName: serviceName,
			MutatingConfigurationName: mutating, ValidatingConfigurationName: validating,
		})
		Expect(err).NotTo(HaveOccurred())
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Start(sctx) }()
		DeferCleanup(func() { stop(); Expect(<-done).To(Succeed()) })

		By("filling the Secret with a CA and a certificate for the Service's DNS names")
		secret := &corev1.Secret{}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret)).To(Succeed())
			g.Expect(secret.Data).To(HaveKey("tls.crt"))
			g.Expect(secret.Data).To(HaveKey("tls.key"))
			g.Expect(secret.Data).To(HaveKey("ca.crt"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM(secret.Data["ca.crt"])).To(BeTrue())

		By("the kubelet mounting the Secret into the cert dir")
		for _, key := range []string{"tls.crt", "tls.key"} {
			Expect(os.WriteFile(filepath.Join(certDir, key), secret.Data[key], 0o600)).To(Succeed())
		}

		By("injecting the CA into both webhook configurations")
		Eventually(func(g Gomega) {
			m := &admissionregistrationv1.MutatingWebhookConfiguration{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: mutating}, m)).To(Succeed())
			g.Expect(m.Webhooks[0].ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]))
			v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: validating}, v)).To(Succeed())
			g.Expect(v.Webhooks[0].ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("serving TLS 1.3 with a certificate the injected CA verifies for the Service")
		Eventually(func() (int, error) {
			resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(probe) + "/readyz")
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			return resp.StatusCode, nil
		}).WithTimeout(60 * time.Second).Should(Equal(http.StatusOK))
		conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{
			RootCAs: pool, ServerName: serviceName + "." + ns + ".svc", MinVersion: tls.VersionTLS13,
			NextProtos: []string{"h2", "http/1.1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.ConnectionState().Version).To(BeEquivalentTo(tls.VersionTLS13))
		Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal("http/1.1"), "HTTP/2 is off")
		Expect(conn.Close()).To(Succeed())

		By("refusing TLS 1.2 clients by default")
		_, err = tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{RootCAs: pool,
			ServerName: serviceName + "." + ns + ".svc", MaxVersion: tls.VersionTLS12, NextProtos: []string{"h2"}})
		Expect(err).To(HaveOccurred())
	})
})
