package policies_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Shipped policy ids.
const (
	fitsClusterQueue     = "kueue_guard.fits_cluster_queue"
	maxGPUs              = "kueue_guard.max_gpus_per_workload"
	requireRequests      = "kueue_guard.require_resource_requests"
	allowedQueues        = "kueue_guard.allowed_queues"
	priorityClassAllowed = "kueue_guard.priority_class_allowed"
	maxExecTime          = "kueue_guard.max_exec_time_required"
	podTermination       = "kueue_guard.pod_termination_bounded"
	draClaimsCounted     = "kueue_guard.dra_claims_counted"
)

// gpuJob is a Job in ml on LocalQueue lq: parallelism pods of gpus GPUs each, with
// cpu and memory requests and a max execution time, so that only what a test
// changes can violate a policy.
func gpuJob(name string, parallelism int64, gpus string) *unstructured.Unstructured {
	j := fixtures.Job("ml", name).Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "3600").
		Requests("cpu", "4").Requests("memory", "16Gi").Requests(gpu, gpus).Obj()
	Expect(unstructured.SetNestedField(j.Object, parallelism, "spec", "parallelism")).To(Succeed())
	Expect(unstructured.SetNestedField(j.Object, parallelism, "spec", "completions")).To(Succeed())
	return j
}

// gpuCluster is ClusterQueue cq in cohort research: 4 GPUs nominal with a
// borrowing limit of 4 (cpu and memory may borrow without limit), with usedGPUs
// in use; LocalQueue lq in namespace ml points to it.
func gpuCluster(usedGPUs string) *cluster.Snapshot {
	return snapshot(gpuClusterObjects(usedGPUs)...)
}

func gpuClusterObjects(usedGPUs string) []client.Object {
	return []client.Object{
		namespace("ml", nil, nil),
		localQueue("ml", "lq", "cq"),
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "a100"}},
		clusterQueue("cq", "research",
			quota{flavor: "a100", resource: "cpu", nominal: "64", used: "8", reserved: "8"},
			quota{flavor: "a100", resource: "memory", nominal: "512Gi", used: "32Gi", reserved: "32Gi"},
			quota{flavor: "a100", resource: gpu, nominal: "4", borrowing: "4", used: usedGPUs, reserved: usedGPUs},
		),
		// A sibling in the cohort with GPUs to lend: cq may borrow up to its limit.
		clusterQueue("lender", "research", quota{flavor: "a100", resource: gpu, nominal: "8"}),
	}
}

func messagesOf(d *admission.Decision, rule string) []string {
	var out []string
	for _, v := range d.Violations {
		if v.Rule == rule {
			out = append(out, v.Message)
		}
	}
	return out
}

var _ = Describe("The shipped policies", func() {
	var engine *policies.Engine
	BeforeEach(func() { engine = loadedEngine(shippedDir) })

	It("are the eight documented policies with their enforcement", func() {
		got := map[string]admission.Enforcement{}
		for _, p := range engine.Policies() {
			got[p.ID] = p.Enforcement
			Expect(p.Title).NotTo(BeEmpty(), p.ID)
			Expect(p.Description).NotTo(BeEmpty(), p.ID)
		}
		Expect(got).To(Equal(map[string]admission.Enforcement{
			allowedQueues: admission.EnforcementDeny, fitsClusterQueue: admission.EnforcementDeny,
			maxExecTime: admission.EnforcementWarn, maxGPUs: admission.EnforcementDeny,
			priorityClassAllowed: admission.EnforcementDeny, requireRequests: admission.EnforcementDeny,
			podTermination: admission.EnforcementDeny, draClaimsCounted: admission.EnforcementDeny,
		}))
	})

	It("deny a JobSet's job that replaces terminating pods, at the field kueue-guard found", func() {
		js := fixtures.JobSet("ml", "js").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").
			Requests("cpu", "1").Requests("memory", "1Gi").Obj()
		jobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		unstructured.RemoveNestedField(jobs[0].(map[string]any), "template", "spec", "podReplacementPolicy")
		Expect(unstructured.SetNestedSlice(js.Object, jobs, "spec", "replicatedJobs")).To(Succeed())
		d := validate(engine, createRequest(js), gpuCluster("0"))
		Expect(d.Denials()).To(HaveLen(1))
		Expect(d.Denials()[0].Rule).To(Equal(podTermination))
		Expect(d.Denials()[0].Field.String()).To(Equal("spec.replicatedJobs[0].template.spec.podReplacementPolicy"))
	})

	It("deny a Job that can never fit its ClusterQueue, naming requested and possible", func() {
		d := validate(engine, createRequest(gpuJob("too-big", 5, "2")), gpuCluster("0"))
		Expect(d.Allowed()).To(BeFalse())
		Expect(messagesOf(d, fitsClusterQueue)).To(ConsistOf(
			`requests 10 nvidia.com/gpu but ClusterQueue "cq" can provide at most 8 (nominal 4, and what cohort "research" can lend it)`))
		Expect(messagesOf(d, maxGPUs)).To(ConsistOf(`requests 10 GPUs (nvidia.com/gpu) but namespace "ml" allows at most 8 per workload`))
		Expect(d.Warnings).To(BeEmpty())
	})

	It("admit a Job that fits, silently when the quota is free", func() {
		d := validate(engine, createRequest(gpuJob("fits", 4, "2")), gpuCluster("0"))
		Expect(d.Allowed()).To(BeTrue())
		Expect(d.Violations).To(BeEmpty())
		Expect(d.Warnings).To(BeEmpty())
	})

	It("admit a Job that fits with a warning when usage leaves less free", func() {
		d := validate(engine, createRequest(gpuJob("waits", 4, "2")), gpuCluster("2"))
		Expect(d.Allowed()).To(BeTrue())
		Expect(rules(d)).To(ConsistOf(fitsClusterQueue + "/warn"))
		Expect(d.Warnings).To(ConsistOf(
			`[kueue_guard.fits_cluster_queue] requests 8 nvidia.com/gpu but ClusterQueue "cq" has 6 free now: it may wait for quota`))
		Expect(len(d.Warnings[0])).To(BeNumerically("<", 120))
	})

	It("judge a JobSet by all its pods", func() {
		jobSet := func(gpus string) *unstructured.Unstructured {
			return fixtures.JobSet("ml", "js").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "600").
				Requests("cpu", "1").Requests("memory", "1Gi").Requests(gpu, gpus).Obj()
		}
		// 2 replicas × 1 pod × 3 GPUs = 6: over the nominal 4, within borrowing.
		d := validate(engine, createRequest(jobSet("3")), gpuCluster("0"))
		Expect(d.Violations).To(BeEmpty())
		// 2 × 5 = 10: never.
		d = validate(engine, createRequest(jobSet("5")), gpuCluster("0"))
		Expect(messagesOf(d, fitsClusterQueue)).To(ConsistOf(
			`requests 10 nvidia.com/gpu but ClusterQueue "cq" can provide at most 8 (nominal 4, and what cohort "research" can lend it)`))
	})

	It("deny a container without requests, pointing at it", func() {
		j := fixtures.Job("ml", "bare").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "60").Obj()
		Expect(unstructured.SetNestedSlice(j.Object, []any{
			map[string]any{"name": "main", "image": "busybox", "resources": map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}}},
			map[string]any{"name": "sidecar", "image": "busybox"},
		}, "spec", "template", "spec", "containers")).To(Succeed())
		d := validate(engine, createRequest(j), gpuCluster("0"))
		Expect(d.Denials()).To(ConsistOf(admission.Violation{
			Rule: requireRequests, Enforcement: admission.EnforcementDeny,
			Field:   fieldpath.Parse("spec.template.spec.containers[1].resources.requests"),
			Message: `container "sidecar" has no cpu or memory request: Kueue charges quota by requests`,
		}))
	})

	It("warn about a missing max execution time", func() {
		j := fixtures.Job("ml", "forever").Queue("lq").Obj()
		d := validate(engine, createRequest(j), gpuCluster("0"))
		Expect(d.Allowed()).To(BeTrue())
		Expect(d.Warnings).To(ConsistOf(
			"[kueue_guard.max_exec_time_required] no kueue.x-k8s.io/max-exec-time-seconds label: an overrun would hold its quota"))
	})

	It("deny a queue the namespace does not allow", func() {
		view := snapshot(namespace("ml", nil, map[string]string{"kueue-guard.io/allowed-queues": "cpu-only, lq-small"}),
			localQueue("ml", "lq", "cq"))
		d := validate(engine, createRequest(gpuJob("j", 1, "1")), view)
		Expect(d.Denials()).To(ConsistOf(admission.Violation{
			Rule: allowedQueues, Enforcement: admission.EnforcementDeny,
			Field:   fieldpath.Parse("metadata.labels[kueue.x-k8s.io/queue-name]"),
			Message: `LocalQueue "lq" is not allowed in namespace "ml" (allowed: cpu-only, lq-small)`,
		}))
	})

	It("deny a reserved priority class to others (data.yaml)", func() {
		j := gpuJob("j", 1, "1")
		j.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/max-exec-time-seconds": "60",
			"kueue.x-k8s.io/priority-class": "critical"})
		d := validate(engine, createRequest(j), gpuCluster("0"))
		Expect(messagesOf(d, priorityClassAllowed)).To(ConsistOf(
			`WorkloadPriorityClass "critical" is reserved for groups ml-platform-admins; namespaces inference-prod`))

		req := createRequest(j)
		req.UserInfo.Groups = append(req.UserInfo.Groups, "ml-platform-admins")
		Expect(validate(engine, req, gpuCluster("0")).Allowed()).To(BeTrue())
	})

	It("skip objects that are not queued", func() {
		j := fixtures.Job("ml", "unqueued").Obj()
		d := validate(engine, createRequest(j), gpuCluster("0"))
		Expect(d.Violations).To(BeEmpty())
		Expect(d.Warnings).To(BeEmpty())
	})

	It("are type-checked against the input schema (METADATA schemas: input: schema.input)", func() {
		files, err := filepath.Glob(filepath.Join(shippedDir, "*.rego"))
		Expect(err).NotTo(HaveOccurred())
		inputRef := ast.MustParseRef("input")
		schemaRef := ast.MustParseRef(policies.InputSchemaRef)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.rego") {
				continue
			}
			src, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			mod, err := ast.ParseModuleWithOpts(f, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
			Expect(err).NotTo(HaveOccurred())
			annotated := false
			for _, a := range mod.Annotations {
				for _, s := range a.Schemas {
					annotated = annotated || (a.Scope == "package" && s.Path.Equal(inputRef) && s.Schema.Equal(schemaRef))
				}
			}
			Expect(annotated).To(BeTrue(), "%s: its package METADATA lacks schemas: - input: %s", f, policies.InputSchemaRef)
		}
	})

	It("are formatted as opa fmt formats them", func() {
		files, err := filepath.Glob(filepath.Join(shippedDir, "*.rego"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
		for _, f := range files {
			src, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			out, err := format.SourceWithOpts(f, src, format.Opts{RegoVersion: ast.RegoV1})
			Expect(err).NotTo(HaveOccurred())
			Expect(string(out)).To(Equal(string(src)), "%s is not opa fmt clean", f)
		}
	})

	It("pass their own Rego tests", func() {
		var out bytes.Buffer
		passed, err := policies.RunTests(context.Background(), shippedDir, &out, policies.TestOptions{Verbose: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(passed).To(BeTrue(), out.String())
		Expect(out.String()).To(MatchRegexp(`(?m)^PASS: (\d+)/(\d+)$`))
		Expect(out.String()).To(ContainSubstring("data.kueue_guard.fits_cluster_queue_test.test_never_fits_is_denied: PASS"))
	})
})
