package faults

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// cutProxy forwards TCP connections to the API server until it is cut: then
// it closes its listener and every connection, so that whoever dials through
// it finds the API server gone (connection refused), until it is restored on
// the same address.
type cutProxy struct {
	addr, upstream string
	mu             sync.Mutex
	ln             net.Listener
	conns          map[net.Conn]bool
}

func newCutProxy(upstream string) *cutProxy {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &cutProxy{addr: ln.Addr().String(), upstream: upstream, conns: map[net.Conn]bool{}}
	p.serve(ln)
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *cutProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// cut makes the API server unreachable through the proxy.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
}

// restore serves again on the same address.
func (p *cutProxy) restore() {
	GinkgoHelper()
	var ln net.Listener
	Eventually(func() (err error) {
		ln, err = net.Listen("tcp", p.addr)
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
	p.serve(ln)
}

// reviewIn is an AdmissionReview of a Job CREATE in namespace ns, for the
// mutating webhook.
func reviewIn(ns string) []byte { return reviewOf(ns, admissionv1.Create) }

// reviewOf is reviewIn with the operation given, as a caller of the webhook
// port other than the API server may write it.
func reviewOf(ns string, op admissionv1.Operation) []byte {
	raw, err := json.Marshal(fixtures.Job(ns, "j").Obj().Object)
	Expect(err).NotTo(HaveOccurred())
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "probe", Operation: op, Namespace: ns, Name: "j",
			Kind:   metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
			Object: runtime.RawExtension{Raw: raw}},
	})
	Expect(err).NotTo(HaveOccurred())
	return body
}

// The API server goes away for 30 s (stopped, partitioned, restarting) while
// the webhook is under steady load: the webhook answers from its informer
// cache, stays ready, fails nothing, and catches up once the API server is
// back.
var _ = Describe("the API server unreachable for 30 s under steady load", func() {
	It("answers every request from the cache, stays ready, and resyncs after", func() {
		u, err := url.Parse(env.Config.Host)
		Expect(err).NotTo(HaveOccurred())
		proxy := newCutProxy(u.Host)
		restCfg := rest.CopyConfig(env.Config)
		restCfg.Host = "https://" + proxy.addr

		cfg := testenv.ConfigWithoutKueue()
		cfg.Policies.Directory = GinkgoT().TempDir()
		srv, err := env.StartServer(ctx, restCfg, cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Stop)

		o := env.WebhookInstallOptions
		hook := fmt.Sprintf("https://%s:%d%s", o.LocalServingHost, o.LocalServingPort, webhookconfig.MutateWorkloadsPath)
		l := &load{pause: 5 * time.Millisecond}
		// The load stops by itself, and the spec fails, if readiness fails.
		wait := l.run(hook, srv.ProbeAddr, 2, 0)
		DeferCleanup(func() { l.stop.Store(true); wait() })
		time.Sleep(time.Second)

		const outage = 30 * time.Second
		proxy.cut()
		sentBefore := l.sent.Load()
		// A namespace with a default queue, created while kueue-guard cannot
		// see the API server: it must be seen once the API server is back.
		late := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "during-outage-",
			Annotations: map[string]string{admission.DefaultQueueAnnotation: "team-queue"}}}
		Expect(env.Client.Create(ctx, late)).To(Succeed())
		// The fault lasts this long by definition: there is no condition to
		// wait for.
		time.Sleep(outage)
		duringOutage := l.sent.Load() - sentBefore
		Expect(l.stop.Load()).To(BeFalse(), "the server stayed ready while the API server was away")
		proxy.restore()

		start := time.Now()
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // a loopback test server's throwaway certificate
		Eventually(func(g Gomega) {
			resp, err := client.Post(hook, "application/json", bytes.NewReader(reviewIn(late.Name)))
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			var out admissionv1.AdmissionReview
			g.Expect(json.NewDecoder(resp.Body).Decode(&out)).To(Succeed())
			g.Expect(out.Response).NotTo(BeNil())
			g.Expect(string(out.Response.Patch)).To(ContainSubstring("team-queue"), "the namespace created during the outage is known")
		}).WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		resynced := time.Since(start)
		l.stop.Store(true)
		wait()

		AddReportEntry("API server unreachable", fmt.Sprintf(
			"%v without the API server: %d AdmissionReviews sent, %d of them during the outage, %d failed %v; ready throughout; a namespace created during the outage was seen %v after the API server was back",
			outage,
			l.sent.Load(),
			duringOutage,
			l.failed.Load(),
			l.errors(),
			resynced.Round(100*time.Millisecond),
		))
		Expect(duringOutage).To(BeNumerically(">", 100), "the load went on during the outage")
		Expect(l.failed.Load()).To(BeZero(), "failed: %v", l.errors())
	})
})
