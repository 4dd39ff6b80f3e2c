package integration

import (
	"crypto/tls"
	"net"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the webhook server's TLS", func() {
	addr := func() string {
		o := env.WebhookInstallOptions
		return net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
	}

	It("refuses a client below its minimum TLS version (1.3)", func() {
		_, err := tls.Dial(
			"tcp",
			addr(),
			&tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12},
		) //nolint:gosec // the test server's self-signed certificate; the spec is about the version
		Expect(err).To(HaveOccurred())
	})

	It("speaks HTTP/1.1 only, even to a client that offers HTTP/2", func() {
		conn, err := tls.Dial(
			"tcp",
			addr(),
			&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}},
		) //nolint:gosec // the test server's self-signed certificate; the spec is about ALPN
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal("http/1.1"))
		Expect(conn.ConnectionState().Version).To(BeEquivalentTo(tls.VersionTLS13))
	})
})

var _ = Describe("the mutating webhook order", func() {
	// A Kueue installed as Helm release "aks-kueue": its configuration sorts
	// before kueue-guard's. The webhook is never called (no namespace matches
	// its selector); only its registration matters.
	kueueFirst := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "aks-kueue-mutating-webhook-configuration"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name:                    "mjob.kb.io",
				AdmissionReviewVersions: []string{"v1"},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
				NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
					Namespace: "aks-kueue", Name: "aks-kueue-webhook-service", Path: new("/mutate-batch-v1-job")}},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}}}},
			}, {
				// Kueue's own API's webhook: what tells Kueue's configuration from an
				// operator's serving the same workload paths.
				Name:                    "mclusterqueue.kb.io",
				AdmissionReviewVersions: []string{"v1"},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
				ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
					Namespace: "aks-kueue", Name: "aks-kueue-webhook-service", Path: new("/mutate-kueue-x-k8s-io-v1beta2-clusterqueue")}},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"kueue.x-k8s.io"}, APIVersions: []string{"v1beta2"}, Resources: []string{"clusterqueues"}}}},
			}},
		}
	}
	const problems = "kueue_guard_webhook_order_problems"

	It("is reported while Kueue's configuration sorts before ours, until Kueue re-invokes its webhooks", func() {
		Expect(metric(problems)).To(BeZero())
		c := kueueFirst()
		Expect(env.Client.Create(ctx, c)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, c))).To(Succeed()) })
		Eventually(func() float64 { return metric(problems) }, 30*time.Second).Should(Equal(1.0))

		By("the JobSet operator's configuration, sorting first too and serving the pod and JobSet paths Kueue uses, is not Kueue's")
		js := kueueFirst()
		js.Name = "jobset-mutating-webhook-configuration"
		js.Webhooks = js.Webhooks[:1]
		js.Webhooks[0].Name = "mpod.kb.io"
		js.Webhooks[0].ClientConfig.Service = &admissionregistrationv1.ServiceReference{
			Namespace: "jobset-system", Name: "jobset-webhook-service", Path: new("/mutate--v1-pod")}
		js.Webhooks[0].Rules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}
		Expect(env.Client.Create(ctx, js)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, js))).To(Succeed()) })

		By("Kueue's mutatingWebhook.reinvocationPolicy IfNeeded: called again after kueue-guard labels the job")
		// The server sees this update after the JobSet configuration's create:
		// no problem left means it did not count that one.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		c.Webhooks[0].ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
		Expect(env.Client.Update(ctx, c)).To(Succeed())
		Eventually(func() float64 { return metric(problems) }, 30*time.Second).Should(BeZero())

		By("Kueue uninstalled")
		c.Webhooks[0].ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		Expect(env.Client.Update(ctx, c)).To(Succeed())
		Eventually(func() float64 { return metric(problems) }, 30*time.Second).Should(Equal(1.0))
		Expect(env.Client.Delete(ctx, c)).To(Succeed())
		Eventually(func() float64 { return metric(problems) }, 30*time.Second).Should(BeZero())
	})
})
