package faults

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Anyone who reaches the webhook port (a pod, where the NetworkPolicy's
// sources are not narrowed and no client CA is required) can post a review
// the API server never would. An operation of its own in each must cost
// kueue-guard no metric series each.
var _ = Describe("reviews with made-up operations sent straight to the webhook port", func() {
	It("are answered and counted under one operation label, not a series each", func() {
		cfg := testenv.ConfigWithoutKueue()
		cfg.Policies.Directory = GinkgoT().TempDir()
		srv, err := env.StartServer(ctx, env.Config, cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Stop)
		o := env.WebhookInstallOptions
		base := "https://" + net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // the caller is the adversary

		const each = 25
		for i := range each {
			for _, path := range []string{webhookconfig.MutateWorkloadsPath, webhookconfig.ValidateWorkloadsPath} {
				body := reviewOf("team-a", admissionv1.Operation("MADE-UP-"+strconv.Itoa(i)))
				resp, err := hc.Post(base+path, "application/json", bytes.NewReader(body))
				Expect(err).NotTo(HaveOccurred())
				Expect(resp.Body.Close()).To(Succeed())
				Expect(resp.StatusCode).To(Equal(http.StatusOK), "answered as a review, not an error")
			}
		}

		series, err := testenv.MetricSeries(srv.MetricAddr, "kueue_guard_admission_requests_total")
		Expect(err).NotTo(HaveOccurred())
		other := 0.0
		for _, s := range series {
			Expect(s).NotTo(ContainSubstring("MADE-UP"))
			if strings.Contains(s, `operation="other"`) {
				v, err := strconv.ParseFloat(s[strings.LastIndex(s, " ")+1:], 64)
				Expect(err).NotTo(HaveOccurred())
				other += v
			}
		}
		Expect(other).To(BeNumerically("==", 2*each))
	})
})
