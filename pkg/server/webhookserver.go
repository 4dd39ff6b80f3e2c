package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Timeouts of the webhook's HTTP server. The API server gives a webhook at most
// 30 s (5 s in our chart); a client that has not sent its headers after
// readHeaderTimeout is not an API server and must not hold a connection.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 90 * time.Second
	maxHeaderBytes    = 64 << 10
)

// webhookServer is a webhook.Server with the TLS and HTTP settings an admission
// webhook wants in production: a TLS minimum version, HTTP/2 off (the API server
// speaks HTTP/1.1 to webhooks, and HTTP/2 has had rapid-reset style DoS issues),
// tight header timeouts, the certificate reloaded from disk when it rotates, and a
// graceful shutdown that finishes in-flight requests.
type webhookServer struct {
	host, certDir   string
	port            int
	minTLS          uint16
	shutdownTimeout time.Duration

	// certsReady, when set, is closed once managed certificates are on disk.
	certsReady <-chan struct{}

	mux     *http.ServeMux
	mu      sync.Mutex
	started bool
}

var _ webhook.Server = (*webhookServer)(nil)

func newWebhookServer(host string, port int, certDir string, minTLS uint16, shutdownTimeout time.Duration) *webhookServer {
	return &webhookServer{host: host, port: port, certDir: certDir, minTLS: minTLS,
		shutdownTimeout: shutdownTimeout, mux: http.NewServeMux()}
}

// NeedLeaderElection implements webhook.Server: every replica serves.
func (*webhookServer) NeedLeaderElection() bool { return false }

// Register implements webhook.Server.
func (s *webhookServer) Register(path string, hook http.Handler) { s.mux.Handle(path, hook) }

// WebhookMux implements webhook.Server.
func (s *webhookServer) WebhookMux() *http.ServeMux { return s.mux }

func (s *webhookServer) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// Start implements webhook.Server. It returns once the server has shut down.
func (s *webhookServer) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("webhook-server")
	if s.certsReady != nil {
		logger.Info("waiting for the managed serving certificate")
		select {
		case <-s.certsReady:
		case <-ctx.Done():
			return nil
		}
	}
	watcher, err := certwatcher.New(filepath.Join(s.certDir, "tls.crt"), filepath.Join(s.certDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("loading the serving certificate from %s: %w", s.certDir, err)
	}
	go func() {
		if err := watcher.Start(ctx); err != nil {
			logger.Error(err, "certificate watcher stopped")
		}
	}()
	cfg := &tls.Config{
		MinVersion:     s.minTLS,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: watcher.GetCertificate,
	}
	ln, err := tls.Listen("tcp", s.addr(), cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// A non-nil, empty map disables HTTP/2 on this server.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		logger.Info("shutting down, finishing in-flight requests", "timeout", s.shutdownTimeout)
		sctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			logger.Error(err, "shutdown did not finish cleanly")
		}
	}()
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	logger.Info("serving webhooks", "address", s.addr(), "minTLSVersion", tls.VersionName(s.minTLS))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}

// StartedChecker implements webhook.Server: healthy once a TLS handshake with the
// server succeeds, which proves a certificate is loaded and served.
func (s *webhookServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		s.mu.Lock()
		started := s.started
		s.mu.Unlock()
		if !started {
			return errors.New("webhook server has not started")
		}
		host := s.host
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		d := &net.Dialer{Timeout: 2 * time.Second}
		// Only reachability and a served certificate are checked here, not trust.
		conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(host, strconv.Itoa(s.port)),
			&tls.Config{InsecureSkipVerify: true, MinVersion: s.minTLS}) //nolint:gosec
		if err != nil {
			return fmt.Errorf("webhook server is not serving TLS: %w", err)
		}
		return conn.Close()
	}
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
