package audit_test

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/audit"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const gpu = "nvidia.com/gpu"

// auditRun is one `kueue-guard audit -o json` against the suite's cluster.
type auditRun struct {
	code   int
	report *review.Report
	stderr string
}

// object is the report's entry for kind namespace/name, or nil.
func (r auditRun) object(kind, ns, name string) *review.Object {
	for _, o := range r.report.Objects {
		if o.Kind == kind && o.Namespace == ns && o.Name == name {
			return o
		}
	}
	return nil
}

func rules(o *review.Object) []string {
	var out []string
	for _, f := range o.Findings {
		out = append(out, f.Rule+"/"+f.Enforcement)
	}
	return out
}

// runAudit runs the CLI with the given flags (besides --kubeconfig and -o json).
func runAudit(args ...string) auditRun {
	GinkgoHelper()
	code, report, stderr, err := env.Audit(ctx, args...)
	Expect(err).NotTo(HaveOccurred())
	return auditRun{code: code, stderr: stderr, report: report}
}

// writeConfig writes a configuration with the profile and returns its path.
func writeConfig(profile string) string {
	p := filepath.Join(GinkgoT().TempDir(), "config.yaml")
	doc := "apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\ninstallProfile: " + profile + "\n"
	if profile == "oss" {
		// No Kueue Configuration in this cluster: name the frameworks.
		doc += "integrations:\n  frameworks: [batch/job, pod, kubeflow.org/pytorchjob, workload.codeflare.dev/appwrapper, leaderworkerset.x-k8s.io/leaderworkerset]\n"
	}
	Expect(os.WriteFile(p, []byte(doc), 0o644)).To(Succeed())
	return p
}

func create(u *unstructured.Unstructured) *unstructured.Unstructured {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, u)).To(Succeed())
	return u
}

// Workloads created before kueue-guard judged anything: the audit must find
// what breaks the policies today, leave a Job's pods to the Job, and not let an
// owner reference hide a workload.
var _ = Describe("kueue-guard audit", Ordered, func() {
	var policyDir string
	// An admitted-looking Job carries the label the shipped policies ask for.
	job := func(name string) fixtures.Object {
		return fixtures.Job("ml", name).Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600")
	}

	BeforeAll(func() {
		for _, o := range fixtures.GPUCluster(nil) {
			o.SetResourceVersion("")
			o.SetUID("")
			Expect(env.Client.Create(ctx, o)).To(Succeed())
		}
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})).To(Succeed())
		policyDir = GinkgoT().TempDir()
		_, err := testenv.CopyShippedPolicies(policyDir)
		Expect(err).NotTo(HaveOccurred())

		small := create(job("small").Requests(gpu, "1").Obj())
		create(job("big").Parallelism(4).Requests(gpu, "4").Obj())
		// The small Job's pod, as the job controller makes it.
		pod := fixtures.Pod("ml", "small-abcde").Queue("q").Obj()
		pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "small",
			UID: small.GetUID(), Controller: new(true)}})
		create(pod)
		// A big Job made to look like part of the small one: Kueue would not
		// queue it on its own.
		hidden := job("hidden").Parallelism(4).Requests(gpu, "4").Obj()
		hidden.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "small",
			UID: small.GetUID(), Controller: new(true)}})
		create(hidden)
		create(fixtures.PyTorchJob("ml", "pt").Queue("q").Obj())
		create(fixtures.AppWrapper("ml", "aw").Queue("q").Obj())
		create(fixtures.LeaderWorkerSet("ml", "lws").Queue("q").Obj())
		create(fixtures.Job("other", "fine").Queue("q").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").Obj())
	})

	It("reports the workloads that break the policies today, with exit code 1", func() {
		r := runAudit("--config", writeConfig("oss"), "--policies", policyDir)
		Expect(r.code).To(Equal(review.ExitDenied), r.stderr)
		Expect(r.object("Job", "ml", "small").Status).To(Equal("allowed"))
		big := r.object("Job", "ml", "big")
		Expect(big.Status).To(Equal("denied"))
		Expect(rules(big)).To(ContainElement("kueue_guard.max_gpus_per_workload/deny"))
	})

	It("judges a Job's pods as the Job, and a workload whose owner reference points at its own kind by itself", func() {
		r := runAudit("--config", writeConfig("oss"), "--policies", policyDir)
		Expect(r.object("Pod", "ml", "small-abcde")).To(BeNil(), "part of the small Job")
		hidden := r.object("Job", "ml", "hidden")
		Expect(hidden).NotTo(BeNil(), "an owner reference does not hide a workload")
		Expect(hidden.Status).To(Equal("denied"))
		Expect(rules(hidden)).To(ContainElement("kueue_guard.untrusted_owner/deny"))
		Expect(r.report.Notes).To(ContainElement(ContainSubstring("1 objects judged as part of the workload that owns them")))
	})

	It("reports every queued PyTorchJob, AppWrapper and LeaderWorkerSet as unsupported under the managed profile", func() {
		r := runAudit("--config", writeConfig("managed"), "--policies", policyDir)
		for _, kind := range []string{"PyTorchJob", "AppWrapper", "LeaderWorkerSet"} {
			name := map[string]string{"PyTorchJob": "pt", "AppWrapper": "aw", "LeaderWorkerSet": "lws"}[kind]
			o := r.object(kind, "ml", name)
			Expect(o).NotTo(BeNil(), kind)
			Expect(rules(o)).To(ContainElement("kueue_guard.unsupported_integration/deny"), kind)
		}
	})

	It("prints the reviewer's text report", func() {
		c := &audit.CLI{}
		fs := pflag.NewFlagSet("audit", pflag.ContinueOnError)
		c.AddFlags(fs)
		Expect(fs.Parse([]string{"--kubeconfig", env.KubeconfigPath, "--config", writeConfig("oss"), "--policies", policyDir, "-n", "ml"})).To(Succeed())
		var out, errOut bytes.Buffer
		code, _ := c.Run(ctx, fs, &out, &errOut)
		Expect(code).To(Equal(review.ExitDenied))
		Expect(out.String()).To(ContainSubstring("Job ml/big"))
		Expect(out.String()).To(ContainSubstring("[kueue_guard.max_gpus_per_workload]"))
		Expect(out.String()).To(ContainSubstring("as CREATEs by " + audit.Auditor))
		AddReportEntry("kueue-guard audit -n ml", out.String())
	})

	It("audits one namespace with -n, and exits 0 when everything there would be admitted", func() {
		r := runAudit("--config", writeConfig("oss"), "--policies", policyDir, "-n", "other")
		Expect(r.code).To(Equal(review.ExitAllowed), r.stderr)
		Expect(r.report.Objects).To(HaveLen(1))
		Expect(r.object("Job", "other", "fine").Status).To(Equal("allowed"))
	})

	It("judges at most --limit workloads, and says it was cut", func() {
		r := runAudit("--config", writeConfig("oss"), "--policies", policyDir, "-n", "ml", "--limit", "2")
		Expect(r.report.Objects).To(HaveLen(2))
		Expect(r.report.Notes).To(ContainElement("cut at --limit: only the first 2 workloads were audited"))
	})

	It("shows a dryrun policy's violations while every workload is admitted", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "trial.rego"), []byte(`# METADATA
# title: Trial cap
# description: A GPU cap being tried out.
# custom:
#   enforcement: dryrun
package team.trial

deny contains "every Job is flagged while this policy is tried" if input.workload.kind.kind == "Job"
`), 0o644)).To(Succeed())
		r := runAudit("--config", writeConfig("oss"), "--policies", dir, "-n", "other")
		Expect(r.code).To(Equal(review.ExitAllowed))
		fine := r.object("Job", "other", "fine")
		Expect(fine.Status).To(Equal("allowed"))
		Expect(rules(fine)).To(ContainElement("team.trial/dryrun"))
	})

	It("follows the cluster: a fixed workload passes and a deleted one is gone on the next run", func() {
		big := &unstructured.Unstructured{}
		big.SetGroupVersionKind(fixtures.Job("ml", "big").GroupVersionKind())
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "ml", Name: "big"}, big)).To(Succeed())
		// Suspended Jobs may change their parallelism.
		Expect(unstructured.SetNestedField(big.Object, int64(1), "spec", "parallelism")).To(Succeed())
		Expect(env.Client.Update(ctx, big)).To(Succeed())
		Expect(env.Client.Delete(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"namespace": "ml", "name": "hidden"}}},
			client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())

		Eventually(func() *review.Object {
			return runAudit("--config", writeConfig("oss"), "--policies", policyDir).object("Job", "ml", "hidden")
		}).Should(BeNil())
		r := runAudit("--config", writeConfig("oss"), "--policies", policyDir)
		Expect(r.object("Job", "ml", "big").Status).To(Equal("allowed"))
	})
})
