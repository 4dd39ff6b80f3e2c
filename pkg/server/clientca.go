package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// clientCA is the CA bundle that --client-ca-file names, re-read when the file
// changes (a rotation of the API server's client certificate CA), so that the
// webhook port accepts only callers with a certificate it signed: the API
// server, configured with a client certificate for its webhook calls
// (AdmissionConfiguration's kubeConfigFile). A bundle that cannot be read or
// holds no certificate at start is an error; later, the last good bundle
// stays in use and the problem is logged.
//
// The readiness check's own handshake presents a certificate of a CA made in
// memory at start, trusted besides the bundle: its key never leaves the
// process, so no caller but the process itself can use it.
type clientCA struct {
	path string
	log  logr.Logger
	// self is the in-memory CA; probe is the readiness check's certificate.
	self  *x509.Certificate
	probe tls.Certificate

	mu      sync.Mutex
	modTime time.Time
	size    int64
	pool    *x509.CertPool
}

func newClientCA(path string, log logr.Logger) (*clientCA, error) {
	c := &clientCA{path: path, log: log}
	var err error
	if c.self, c.probe, err = selfSignedProbe(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	if err := c.load(fi); err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	return c, nil
}

// load reads the bundle; the caller holds mu or owns c.
func (c *clientCA) load(fi os.FileInfo) error {
	raw, err := os.ReadFile(c.path)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) || !bytes.Contains(raw, []byte("-----BEGIN CERTIFICATE-----")) {
		return fmt.Errorf("%s holds no PEM certificate", c.path)
	}
	pool.AddCert(c.self)
	c.pool, c.modTime, c.size = pool, fi.ModTime(), fi.Size()
	return nil
}

// current returns the bundle, re-reading the file when its size or
// modification time changed. One stat per TLS handshake: the API server keeps
// its connections to a webhook alive.
func (c *clientCA) current() *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := os.Stat(c.path)
	if err != nil {
		c.log.Error(err, "client CA bundle unreadable; keeping the last one read", "file", c.path)
		return c.pool
	}
	if fi.ModTime().Equal(c.modTime) && fi.Size() == c.size {
		return c.pool
	}
	if err := c.load(fi); err != nil {
		c.log.Error(err, "client CA bundle refused; keeping the last one read", "file", c.path)
		// Do not re-read the same bad file on every handshake.
		c.modTime, c.size = fi.ModTime(), fi.Size()
		return c.pool
	}
	c.log.Info("client CA bundle reloaded", "file", c.path)
	return c.pool
}

// requireClientCert makes a TLS configuration require, and verify against the
// bundle, a client certificate on every handshake.
func (c *clientCA) requireClientCert(cfg *tls.Config) {
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.ClientCAs = c.current()
	base := cfg
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		pool := c.current()
		if pool == base.ClientCAs {
			return nil, nil // the base configuration, unchanged
		}
		next := base.Clone()
		next.GetConfigForClient = nil
		next.ClientCAs = pool
		return next, nil
	}
}

// selfSignedProbe makes the in-memory CA and the readiness check's client
// certificate it signs.
func selfSignedProbe() (*x509.Certificate, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kueue-guard readiness CA (in memory)"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(100, 0, 0),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kueue-guard readiness"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(100, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return ca, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// startedChecker is the readiness check of a webhook port that requires client
// certificates: a whole handshake with the probe certificate, so that the
// check neither fails nor logs a refused handshake.
func (c *clientCA) startedChecker(host string, port int) func(*http.Request) error {
	cfg := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{c.probe}} //nolint:gosec // checks that the port serves, not whom
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	return func(*http.Request) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		// In TLS 1.3 the server judges the client's certificate after the
		// client's side of the handshake is done: read to see its verdict.
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := conn.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			_ = conn.Close()
			return fmt.Errorf("webhook server refused the readiness check's handshake: %w", err)
		}
		return conn.Close()
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
