package audit_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/audit"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/server"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// gpuCap denies a queued workload asking for more than 4 GPUs in total.
const gpuCap = `# METADATA
# title: GPU cap
# description: At most 4 GPUs per workload.
# custom:
#   severity: high
package team.gpu_cap

deny contains sprintf("requests %v GPUs, more than 4", [n]) if {
	n := object.get(input.workload.totalRequests, "nvidia.com/gpu", 0)
	n > 4
}
`

// trial flags every Job while it is tried out (dryrun): admission passes.
const trial = `# METADATA
# title: Trial
# description: A rule being tried.
# custom:
#   enforcement: dryrun
package team.trial

deny contains "flagged while this policy is tried" if input.workload.kind.kind == "Job"
`

// auditServer starts a kueue-guard server auditing every interval, with its own
// webhook port (the suite registers no webhooks), as identity.
func auditServer(identity, policyDir string, interval time.Duration) *testenv.Server {
	GinkgoHelper()
	cfg := testenv.ConfigWithoutKueue()
	cfg.InstallProfile = config.ProfileOSS
	cfg.Integrations.Frameworks = []string{"batch/job", "pod"}
	cfg.Policies.Directory = policyDir
	cfg.Audit.Interval = &metav1.Duration{Duration: interval}
	certDir := GinkgoT().TempDir()
	_, err := testenv.WriteServingCert(certDir, []net.IP{net.ParseIP("127.0.0.1")}, nil)
	Expect(err).NotTo(HaveOccurred())
	port, err := testenv.FreePort()
	Expect(err).NotTo(HaveOccurred())
	srv, err := env.StartServerOptions(ctx, asChartServiceAccount(), cfg, func(o *server.Options) {
		o.AuditIdentity, o.CertDir, o.WebhookPort, o.WebhookHost = identity, certDir, port, "127.0.0.1"
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Stop)
	return srv
}

// asChartServiceAccount is the API server connection as the chart's service
// account, with nothing but the RBAC the chart grants it (applied by
// applyChartRBAC): the audit must work with exactly that.
func asChartServiceAccount() *rest.Config {
	c := rest.CopyConfig(env.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + testenv.ServerNamespace + ":kueue-guard",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testenv.ServerNamespace, "system:authenticated"}}
	return c
}

// applyChartRBAC creates the chart's RBAC objects with its default values.
func applyChartRBAC() {
	GinkgoHelper()
	objs, err := testenv.RenderChart(nil)
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, o := range objs {
		if o.GroupVersionKind().Group == "rbac.authorization.k8s.io" {
			Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, o))).To(Succeed())
			n++
		}
	}
	Expect(n).To(BeNumerically(">=", 4))
}

// report reads kueue-guard's Report in ns.
func report(ns string) (*openreports.Report, error) {
	r := &openreports.Report{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: audit.ReportName}, r)
	return r, err
}

// resultsOf are the report's results for a workload name, as "policy/result".
func resultsOf(r *openreports.Report, name string) []string {
	var out []string
	for _, res := range r.Results {
		for _, s := range res.Subjects {
			if s.Name == name {
				out = append(out, res.Policy+"/"+string(res.Result))
			}
		}
	}
	return out
}

// metricLine sums the samples of a metric whose labels contain every given
// label="value" pair.
func metricLine(addr, name string, labels ...string) float64 {
	GinkgoHelper()
	resp, err := http.Get("http://" + addr + "/metrics")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	var total float64
lines:
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		Expect(err).NotTo(HaveOccurred())
		total += v
	}
	return total
}

// The audit loop in serve, run as the chart's service account with only the
// chart's RBAC: workloads that were there before the policy are reported once
// the policy is added, one replica audits at a time, and a dryrun policy's
// findings show while admission would pass.
var _ = Describe("the audit loop", Ordered, func() {
	const ns = "loop"
	const interval = 2 * time.Second
	var policyDir string
	var a, b *testenv.Server

	BeforeAll(func() {
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.ServerNamespace}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.DefaultKueueNamespace}},
			&kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "q"}, Spec: kueue.LocalQueueSpec{ClusterQueue: "cq"}},
		} {
			Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, o))).To(Succeed())
		}
		create(fixtures.Job(ns, "small").Queue("q").Requests(gpu, "1").Obj())
		create(fixtures.Job(ns, "big").Queue("q").Parallelism(2).Requests(gpu, "4").Obj())
		applyChartRBAC()
		policyDir = GinkgoT().TempDir()
		a = auditServer("server-a", policyDir, interval)
		b = auditServer("server-b", policyDir, interval)
	})

	It("reports every workload as passing before any policy", func() {
		Eventually(func(g Gomega) {
			r, err := report(ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resultsOf(r, "small")).To(ConsistOf("kueue-guard/pass"))
			g.Expect(resultsOf(r, "big")).To(ConsistOf("kueue-guard/pass"))
			g.Expect(r.Source).To(Equal(audit.Source))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})

	It("is run by exactly one of two replicas", func() {
		lease := &coordinationv1.Lease{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.ServerNamespace, Name: audit.LeaseName}, lease)).To(Succeed())
		holder := *lease.Spec.HolderIdentity
		Expect(holder).To(BeElementOf("server-a", "server-b"))
		Consistently(func() string {
			r, err := report(ns)
			Expect(err).NotTo(HaveOccurred())
			return r.Annotations[audit.AuditedByAnnotation]
		}).WithTimeout(3 * interval).WithPolling(interval / 4).Should(Equal(holder))
	})

	It("reports a workload that breaks a policy added later within an interval of the load, with the policy's severity", func() {
		added := time.Now()
		Expect(os.WriteFile(filepath.Join(policyDir, "gpu-cap.rego"), []byte(gpuCap), 0o644)).To(Succeed())
		Eventually(func(g Gomega) {
			r, err := report(ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resultsOf(r, "big")).To(ConsistOf("team.gpu_cap/fail"))
			g.Expect(resultsOf(r, "small")).To(ConsistOf("kueue-guard/pass"))
			g.Expect(r.Summary.Fail).To(Equal(1))
			for _, res := range r.Results {
				if res.Policy == "team.gpu_cap" {
					g.Expect(string(res.Severity)).To(Equal("high"))
					g.Expect(res.Description).To(Equal("requests 8 GPUs, more than 4"))
				}
			}
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		AddReportEntry("policy added → reported", fmt.Sprintf("%v (audit.interval %v)", time.Since(added).Round(100*time.Millisecond), interval))
	})

	It("shows a dryrun policy's findings in the report and the gauge", func() {
		Expect(os.WriteFile(filepath.Join(policyDir, "trial.rego"), []byte(trial), 0o644)).To(Succeed())
		Eventually(func(g Gomega) {
			r, err := report(ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resultsOf(r, "small")).To(ConsistOf("team.trial/warn"))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Eventually(func() float64 {
			return metricLine(a.MetricAddr, "kueue_guard_audit_results", `policy="team.trial"`, `enforcement="dryrun"`, `result="warn"`)
		}).WithTimeout(10*time.Second).Should(BeNumerically(">=", 2), "the two Jobs here, and the CLI specs' Jobs")
	})

	It("are what kubectl get reports shows, and what kueue-guard audit -o json finds", func() {
		out, stderr, err := env.Kubectl(nil, "get", "reports", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(out).To(MatchRegexp(`(?m)^NAME\s+PASS\s+FAIL\s+WARN\s+ERROR\s+SKIP\s+AGE`))
		Expect(out).To(MatchRegexp(`(?m)^kueue-guard\s+0\s+1\s+2\s+0\s+0\s`))
		AddReportEntry("kubectl get reports -n "+ns, out)
		yamlOut, _, err := env.Kubectl(nil, "get", "report", audit.ReportName, "-n", ns, "-o", "yaml")
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("the Report", yamlOut)

		r, err := report(ns)
		Expect(err).NotTo(HaveOccurred())
		fromReport := map[string][]string{}
		for _, res := range r.Results {
			if res.Result != "pass" {
				fromReport[res.Subjects[0].Name] = append(fromReport[res.Subjects[0].Name], res.Policy+"/"+string(res.Result))
			}
		}
		cli := runAudit("--config", writeConfig("oss"), "--policies", policyDir, "-n", ns)
		fromCLI := map[string][]string{}
		for _, o := range cli.report.Objects {
			for _, f := range o.Findings {
				result := "warn"
				if f.Enforcement == "deny" {
					result = "fail"
				}
				fromCLI[o.Name] = append(fromCLI[o.Name], f.Rule+"/"+result)
			}
		}
		Expect(fromCLI).To(Equal(fromReport))
	})

	It("passes a fixed workload and forgets a deleted one on the next runs", func() {
		big := &unstructured.Unstructured{}
		big.SetGroupVersionKind(fixtures.Job(ns, "big").GroupVersionKind())
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big"}, big)).To(Succeed())
		Expect(unstructured.SetNestedField(big.Object, int64(1), "spec", "parallelism")).To(Succeed())
		Expect(env.Client.Update(ctx, big)).To(Succeed())
		Expect(env.Client.Delete(ctx, fixtures.Job(ns, "small").Obj(), client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) {
			r, err := report(ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resultsOf(r, "big")).To(ConsistOf("team.trial/warn"), "no longer over the cap")
			g.Expect(resultsOf(r, "small")).To(BeEmpty())
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})

	It("leaves a Report that says what the next runs find unwritten", func() {
		lease := &coordinationv1.Lease{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.ServerNamespace, Name: audit.LeaseName}, lease)).To(Succeed())
		holder := a
		if *lease.Spec.HolderIdentity == "server-b" {
			holder = b
		}
		before, err := report(ns)
		Expect(err).NotTo(HaveOccurred())
		lastRun := func() float64 { return metricLine(holder.MetricAddr, "kueue_guard_audit_last_run_timestamp_seconds") }
		// The run that wrote it may still be the last one: wait for two more.
		first := lastRun()
		Eventually(lastRun).WithTimeout(4 * interval).WithPolling(interval / 4).Should(BeNumerically(">", first))
		second := lastRun()
		updates := metricLine(holder.MetricAddr, "kueue_guard_audit_report_writes_total", `operation="update"`)
		Eventually(lastRun).WithTimeout(4 * interval).WithPolling(interval / 4).Should(BeNumerically(">", second))
		after, err := report(ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "nothing changed, nothing written")
		Expect(metricLine(holder.MetricAddr, "kueue_guard_audit_report_writes_total", `operation="update"`)).To(Equal(updates))
	})

	It("moves to the other replica when the auditing one stops", func() {
		lease := &coordinationv1.Lease{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.ServerNamespace, Name: audit.LeaseName}, lease)).To(Succeed())
		holder, other, stopped := *lease.Spec.HolderIdentity, "server-b", a
		if holder == "server-b" {
			other, stopped = "server-a", b
		}
		start := time.Now()
		Expect(stopped.Stop()).To(Succeed())
		Eventually(func(g Gomega) {
			r, err := report(ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Annotations[audit.AuditedByAnnotation]).To(Equal(other))
		}).WithTimeout(45 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		AddReportEntry("audit failover", fmt.Sprintf("%s stopped; %s wrote the report %v later", holder, other, time.Since(start).Round(100*time.Millisecond)))
	})
})
