package integration

import (
	"crypto/tls"
	"net"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the webhook server's TLS", func() {
	addr := func() string {
		o := env.WebhookInstallOptions
		return net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
	}

	It("refuses a client below its minimum TLS version (1.3)", func() {
		_, err := tls.Dial("tcp", addr(), &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}) //nolint:gosec
		Expect(err).To(HaveOccurred())
	})

	It("speaks HTTP/1.1 only, even to a client that offers HTTP/2", func() {
		conn, err := tls.Dial("tcp", addr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}) //nolint:gosec
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal("http/1.1"))
		Expect(conn.ConnectionState().Version).To(BeEquivalentTo(tls.VersionTLS13))
	})
})
