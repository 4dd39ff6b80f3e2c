package server

import (
	"context"
	"crypto/tls"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// newWebhookServer is controller-runtime's webhook server with the TLS settings an
// admission webhook wants in production: a TLS minimum version and HTTP/2 off
// (the API server speaks HTTP/1.1 to webhooks, and HTTP/2 has had rapid-reset
// style DoS issues), as Kueue's own manager configures it. The server reloads the
// certificate from certDir when it rotates (certwatcher) and finishes in-flight
// requests on shutdown, within the manager's graceful shutdown timeout.
// With clientCA, only callers with a certificate it signed complete a
// handshake.
func newWebhookServer(host string, port int, certDir string, minTLS uint16, clientCA *clientCA) webhook.Server {
	return webhook.NewServer(webhook.Options{
		Host: host, Port: port, CertDir: certDir, CertName: "tls.crt", KeyName: "tls.key",
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.MinVersion = minTLS
			c.NextProtos = []string{"http/1.1"}
			if clientCA != nil {
				clientCA.requireClientCert(c)
			}
		}},
	})
}

// certsReadyServer starts its webhook server only once managed certificates are
// on disk: controller-runtime's server fails at start when the certificate files
// do not exist yet, and the certificate rotator writes them after the manager
// has started. (Kept because the library has no such hook.)
type certsReadyServer struct {
	webhook.Server
	ready <-chan struct{}
}

// Start implements webhook.Server.
func (s certsReadyServer) Start(ctx context.Context) error {
	log.FromContext(ctx).WithName("webhook-server").Info("waiting for the managed serving certificate")
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	}
	return s.Server.Start(ctx)
}

// ParseTLSVersion maps the --tls-min-version flag to a TLS version.
func ParseTLSVersion(v string) (uint16, error) {
	switch v {
	case "1.3", "VersionTLS13":
		return tls.VersionTLS13, nil
	case "1.2", "VersionTLS12":
		return tls.VersionTLS12, nil
	}
	return 0, fmt.Errorf("unsupported TLS minimum version %q: use 1.3 (default) or 1.2", v)
}
