package integration

import (
	"crypto/tls"
	"io"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kueue-guard/kueue-guard/pkg/server"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The metrics tell who is denied what, per rule and namespace: only a caller
// the API server authenticates and authorizes for a get of /metrics reads them.
var _ = Describe("the secure metrics endpoint", func() {
	It("refuses a caller without a valid token, answers 403 to a service account without the metrics-reader role, and the metrics to one with it", func() {
		s := extraServer(func(o *server.Options) { o.MetricsSecure = true })

		ns := namespace(nil, nil)
		cs, err := kubernetes.NewForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())
		token := func(name string) string {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		Expect(k8sClient.Create(ctx, reader)).To(Succeed())
		scraper, nobody := token("scraper"), token("nobody")
		Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "scraper-"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: ns}}})).To(Succeed())

		c := &http.Client{
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}},
		} //nolint:gosec // a loopback test server's throwaway certificate
		get := func(bearer string) (int, string) {
			req, err := http.NewRequest(http.MethodGet, "https://"+s.MetricAddr+"/metrics", nil)
			Expect(err).NotTo(HaveOccurred())
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			resp, err := c.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(body)
		}

		// No credentials, or a token the API server does not know: refused.
		// (controller-runtime's filter, as in Kueue's manager, answers 500
		// "Authentication failed" when the API server's review says no.)
		code, body := get("")
		Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusInternalServerError))
		Expect(body).NotTo(ContainSubstring("kueue_guard_"))
		code, body = get("not-a-token")
		Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusInternalServerError))
		Expect(body).NotTo(ContainSubstring("kueue_guard_"))
		code, _ = get(nobody)
		Expect(code).To(Equal(http.StatusForbidden))
		Eventually(func() int { code, _ := get(scraper); return code }).Should(Equal(http.StatusOK))
		_, body = get(scraper)
		Expect(body).To(ContainSubstring("kueue_guard_kueue_api_served"))

		if resp, err := http.Get("http://" + s.MetricAddr + "/metrics"); err == nil {
			plain, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(string(plain)).NotTo(ContainSubstring("kueue_guard_"), "never the metrics in the clear")
		}
	})
})
