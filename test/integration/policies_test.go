package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// installShippedPolicies copies the shipped policies into the watched directory.
func installShippedPolicies() {
	GinkgoHelper()
	_, err := testenv.CopyShippedPolicies(policyDir)
	Expect(err).NotTo(HaveOccurred())
}

func metric(name string) float64 {
	GinkgoHelper()
	v, err := testenv.MetricValue(srv.MetricAddr, name)
	Expect(err).NotTo(HaveOccurred())
	return v
}

func gpuJob(ns, name string, pods, gpusPerPod int64) *fixtures.Object {
	o := fixtures.Job(ns, name).Queue("lq").Parallelism(pods).Requests("nvidia.com/gpu", strconv.FormatInt(gpusPerPod, 10))
	return &o
}

var _ = Describe("quota policies as code", Ordered, func() {
	const fitsField = "metadata"
	var ns string

	BeforeAll(func() {
		installShippedPolicies()
		DeferCleanup(func() {
			entries, _ := os.ReadDir(policyDir)
			for _, e := range entries {
				Expect(os.Remove(filepath.Join(policyDir, e.Name()))).To(Succeed())
			}
		})
		cq := &kueue.ClusterQueue{
			ObjectMeta: metav1.ObjectMeta{Name: "cq"},
			Spec: kueue.ClusterQueueSpec{
				CohortName: "research",
				ResourceGroups: []kueue.ResourceGroup{{
					CoveredResources: []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"},
					Flavors: []kueue.FlavorQuotas{{Name: "default-flavor", Resources: []kueue.ResourceQuota{
						{Name: "cpu", NominalQuota: resource.MustParse("100")},
						{Name: "memory", NominalQuota: resource.MustParse("200Gi")},
						{Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("4"), BorrowingLimit: new(resource.MustParse("4"))},
					}}},
				}},
			},
		}
		Expect(k8sClient.Create(ctx, cq)).To(Succeed())
		// A sibling with GPUs to lend: cq may borrow up to its limit of 4.
		lender := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "lender"},
			Spec: kueue.ClusterQueueSpec{CohortName: "research", ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"},
				Flavors: []kueue.FlavorQuotas{{Name: "default-flavor", Resources: []kueue.ResourceQuota{
					{Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("8")}}}}}}}}
		Expect(k8sClient.Create(ctx, lender)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, lender)).To(Succeed()) })
		ns = namespace(map[string]string{"kueue-guard.io/max-gpus": "16"}, nil)
		lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lq"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "cq"}}
		Expect(k8sClient.Create(ctx, lq)).To(Succeed())
		// Wait until the engine serves the shipped set and the cache has the queues.
		Eventually(func(g Gomega) {
			err := k8sClient.Create(ctx, gpuJob(ns, "probe", 5, 2).Obj(), client.DryRunAll)
			g.Expect(err).To(MatchError(ContainSubstring("[kueue_guard.fits_cluster_queue]")))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})

	It("rejects a job that can never fit its ClusterQueue, naming 10 requested vs 8 possible", func() {
		err := k8sClient.Create(ctx, gpuJob(ns, "too-big", 5, 2).Obj())
		invalid(err, fitsField, `[kueue_guard.fits_cluster_queue] requests 10 nvidia.com/gpu but ClusterQueue "cq" `+
			`can provide at most 8 (nominal 4, and what cohort "research" can lend it)`)
	})

	// A tenant leaves the GPU request out, hoping to be charged nothing: Kueue
	// charges the namespace LimitRange's default, and so do the policies.
	It("charges a Job without requests the LimitRange's defaults, as Kueue does", func() {
		limited := namespace(map[string]string{"kueue-guard.io/max-gpus": "8"}, nil)
		localQueue(limited, "lq")
		Expect(k8sClient.Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: limited, Name: "gpus"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				Default: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("9")}}}}})).To(Succeed())
		bare := fixtures.Job(limited, "no-requests").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "60").Obj()
		Eventually(func() error {
			return clientAs("alice").Create(ctx, bare.DeepCopy(), client.DryRunAll)
		}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring(
			`[kueue_guard.max_gpus_per_workload] requests 9 GPUs (nvidia.com/gpu) but namespace "` + limited + `" allows at most 8`)))
	})

	// A tenant splits a big job into a pod group of small pods, each under the
	// cap: Kueue admits the group as one Workload, and so the policies judge
	// each pod as the whole group.
	It("charges each pod of a pod group for the whole group, as Kueue does", func() {
		capped := namespace(map[string]string{"kueue-guard.io/max-gpus": "8"}, nil)
		localQueue(capped, "lq")
		pod := func(total string) *unstructured.Unstructured {
			return fixtures.Pod(capped, "member-0").Queue("lq").Requests("nvidia.com/gpu", "1").
				Label("kueue.x-k8s.io/max-exec-time-seconds", "60").Label("kueue.x-k8s.io/pod-group-name", "split").
				Set(map[string]any{"kueue.x-k8s.io/pod-group-total-count": total}, "metadata", "annotations").Obj()
		}
		Eventually(func() error {
			return clientAs("alice").Create(ctx, pod("12"), client.DryRunAll)
		}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring(
			`[kueue_guard.max_gpus_per_workload] requests 12 GPUs (nvidia.com/gpu) but namespace "` + capped + `" allows at most 8`)))
		Expect(clientAs("alice").Create(ctx, pod("8"), client.DryRunAll)).To(Succeed(), "a group of 8 one-GPU pods fits the cap")
	})

	// A tenant keeps the GPUs out of the TrainJob and puts them in a
	// TrainingRuntime of their own namespace: Kueue charges the runtime's pods,
	// and so do the policies.
	It("charges a TrainJob the pods of the runtime it names, as Kueue does", func() {
		capped := namespace(map[string]string{"kueue-guard.io/max-gpus": "8"}, nil)
		localQueue(capped, "lq")
		rt := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
			"metadata": map[string]any{"name": "hidden-gpus", "namespace": capped},
			"spec": map[string]any{"mlPolicy": map[string]any{"numNodes": int64(1), "torch": map[string]any{}},
				"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
					"name": "node",
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
						"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
							"name": "node", "image": "torch",
							"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "4"}}}}}}}}}}}}}}}
		Expect(clientAs("alice").Create(ctx, rt)).To(Succeed())
		tj := fixtures.TrainJob(capped, "train").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "60").
			Set(map[string]any{"name": "hidden-gpus", "kind": "TrainingRuntime"}, "spec", "runtimeRef").
			Set(int64(3), "spec", "trainer", "numNodes")
		Eventually(func() error {
			return clientAs("alice").Create(ctx, tj.Obj(), client.DryRunAll)
		}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring(
			`[kueue_guard.max_gpus_per_workload] requests 12 GPUs (nvidia.com/gpu) but namespace "` + capped + `" allows at most 8`)))
		Expect(clientAs("alice").Create(ctx, tj.Set(int64(2), "spec", "trainer", "numNodes").Obj(), client.DryRunAll)).
			To(Succeed(), "2 nodes of 4 GPUs fit the cap")
	})

	// Kueue admits a Deployment pod by pod: the cap is per pod, so many small
	// pods pass and one big pod does not.
	It("caps a Deployment per pod, as Kueue admits it", func() {
		capped := namespace(map[string]string{"kueue-guard.io/max-gpus": "8"}, nil)
		localQueue(capped, "lq")
		many := fixtures.Deployment(capped, "many").Queue("lq").Set(int64(10), "spec", "replicas").
			Requests("nvidia.com/gpu", "1").Label("kueue.x-k8s.io/max-exec-time-seconds", "60").Obj()
		Expect(clientAs("alice").Create(ctx, many, client.DryRunAll)).To(Succeed(), "10 pods of 1 GPU: ten 1-GPU workloads")
		big := fixtures.Deployment(capped, "big").Queue("lq").Requests("nvidia.com/gpu", "9").Obj()
		Expect(clientAs("alice").Create(ctx, big, client.DryRunAll)).To(MatchError(ContainSubstring(
			`[kueue_guard.max_gpus_per_workload] each pod requests 9 GPUs`)))
	})

	// Kueue's webhook does not see /scale, and a PyTorchJob's CRD scales its
	// Worker replicas, which Kueue charges.
	It("judges kubectl scale of a queued PyTorchJob's workers as the update it is: past the cap, refused", func() {
		// An upstream install whose Kueue manages PyTorchJobs, in a namespace
		// of its own (other specs write Kueue's Configuration in kueue-system).
		const kueueNS = "kueue-with-pytorch"
		ensureNamespace(kueueNS)
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: kueueNS, Name: cluster.KueueDefaultConfigMapName},
			Data:       map[string]string{cluster.KueueConfigKey: "integrations:\n  frameworks: [batch/job, kubeflow.org/pytorchjob]\n"}}))).To(Succeed())
		cfg := suiteConfig()
		cfg.InstallProfile = config.ProfileOSS
		cfg.KueueNamespace = kueueNS
		startServer(cfg)
		DeferCleanup(func() { startServer(suiteConfig()) })
		capped := namespace(map[string]string{"kueue-guard.io/max-gpus": "8"}, nil)
		localQueue(capped, "lq")
		pt := fixtures.PyTorchJob(capped, "scaled").Queue("lq").Requests("nvidia.com/gpu", "2").
			Label("kueue.x-k8s.io/max-exec-time-seconds", "60").Obj()
		Expect(k8sClient.Create(ctx, pt)).To(Succeed(), "a master and a worker of 2 GPUs each")
		scale := func(n int32) error {
			return k8sClient.SubResource("scale").Update(ctx, pt, client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: n}}))
		}
		// Refused for a retry until the cache has it, then by the cap.
		Eventually(func() error { return scale(4) }).WithTimeout(10 * time.Second).
			Should(MatchError(ContainSubstring("[kueue_guard.max_gpus_per_workload] requests 10 GPUs")))
		Expect(scale(3)).To(Succeed(), "4 pods of 2 GPUs: 8, within the cap")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pt), pt)).To(Succeed())
		workers, _, _ := unstructured.NestedInt64(pt.Object, "spec", "pytorchReplicaSpecs", "Worker", "replicas")
		Expect(workers).To(BeEquivalentTo(3))
	})

	It("admits an 8-GPU job, and warns when the queue's usage leaves less free", func() {
		c, warnings := clientWithWarnings()
		Expect(c.Create(ctx, gpuJob(ns, "fits", 4, 2).Obj())).To(Succeed())
		Expect(warnings.All()).NotTo(ContainSubstring("free now"))

		cq := &kueue.ClusterQueue{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "cq"}, cq)).To(Succeed())
		cq.Status.FlavorsUsage = gpuUsage("3")
		Expect(k8sClient.Status().Update(ctx, cq)).To(Succeed())

		Eventually(func(g Gomega) {
			c, warnings := clientWithWarnings()
			g.Expect(c.Create(ctx, gpuJob(ns, "fits-later", 4, 2).Obj(), client.DryRunAll)).To(Succeed())
			g.Expect(warnings.All()).To(ContainSubstring(
				`[kueue_guard.fits_cluster_queue] requests 8 nvidia.com/gpu but ClusterQueue "cq" has 5 free now: it may wait for quota`))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	// The server caches the input's ClusterQueue part per object version, cut
	// to what the loaded policies read: an admin's new policy that reads more
	// of the same, unchanged queue must be given it.
	It("judges by a new policy what it reads of a ClusterQueue unchanged since the policies before it read it", func() {
		cq := &kueue.ClusterQueue{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "cq"}, cq)).To(Succeed())
		before := cq.Status.DeepCopy()
		DeferCleanup(func() {
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "cq"}, cq)).To(Succeed())
			cq.Status = *before
			Expect(k8sClient.Status().Update(ctx, cq)).To(Succeed())
		})
		cq.Status.PendingWorkloads = 7
		cq.Status.FlavorsUsage = gpuUsage("2")
		Expect(k8sClient.Status().Update(ctx, cq)).To(Succeed())
		// The shipped policies judge a Job by this version of the queue (its
		// free GPUs), reading none of its workload counts.
		Eventually(func(g Gomega) {
			c, warnings := clientWithWarnings()
			g.Expect(c.Create(ctx, gpuJob(ns, "busy", 4, 2).Obj(), client.DryRunAll)).To(Succeed())
			g.Expect(warnings.All()).To(ContainSubstring(`ClusterQueue "cq" has 6 free now`))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		busy := filepath.Join(policyDir, "busy.rego")
		Expect(os.WriteFile(busy, []byte(`package team.busy

deny contains "the queue is busy" if input.clusterQueue.pendingWorkloads > 5
`), 0o644)).To(Succeed())
		DeferCleanup(func() { Expect(os.Remove(busy)).To(Succeed()) })
		Eventually(func() error {
			return clientAs("alice").Create(ctx, gpuJob(ns, "busy", 4, 2).Obj(), client.DryRunAll)
		}).WithTimeout(15 * time.Second).Should(MatchError(ContainSubstring("[team.busy] the queue is busy")))
	})

	// A policy scoped by custom.match applies where the admin's namespace
	// labels say, whatever the tenant writes in the object; relabelling a
	// namespace takes effect on the next request, without a restart.
	It("applies a policy where its custom.match selects the namespace, and follows the namespace's labels", func() {
		writePolicy := filepath.Join(policyDir, "sandbox.rego")
		Expect(os.WriteFile(writePolicy, []byte(`# METADATA
# title: No GPUs in sandboxes
# custom:
#   match:
#     kinds:
#     - apiGroups: [batch]
#       kinds: [Job]
#     namespaceSelector:
#       matchLabels: {tier: sandbox}
package team.sandbox

deny contains "sandboxes get no GPUs" if input.workload.totalRequests["nvidia.com/gpu"] > 0
`), 0o644)).To(Succeed())
		DeferCleanup(func() { Expect(os.Remove(writePolicy)).To(Succeed()) })
		sandbox := namespace(map[string]string{"tier": "sandbox"}, nil)
		localQueue(sandbox, "lq")
		other := namespace(nil, nil)
		localQueue(other, "lq")
		Eventually(func() error {
			return clientAs("alice").Create(ctx, gpuJob(sandbox, "j", 1, 1).Obj(), client.DryRunAll)
		}).WithTimeout(15 * time.Second).Should(MatchError(ContainSubstring("[team.sandbox] sandboxes get no GPUs")))
		// The tenant's own labels do not take the Job out of the policy.
		disguised := gpuJob(sandbox, "j", 1, 1).Label("tier", "production").Obj()
		Expect(clientAs("alice").Create(ctx, disguised, client.DryRunAll)).To(MatchError(ContainSubstring("[team.sandbox]")))
		// Elsewhere it does not apply, nor to a kind it does not name.
		Expect(clientAs("alice").Create(ctx, gpuJob(other, "j", 1, 1).Obj(), client.DryRunAll)).To(Succeed())
		js := fixtures.JobSet(sandbox, "js").Queue("lq").Requests("nvidia.com/gpu", "1").Obj()
		if err := clientAs("alice").Create(ctx, js, client.DryRunAll); err != nil {
			Expect(err.Error()).NotTo(ContainSubstring("[team.sandbox]"))
		}

		// The admin makes the other namespace a sandbox: the next Job there is judged.
		nsObj := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: other}, nsObj)).To(Succeed())
		nsObj.Labels["tier"] = "sandbox"
		Expect(k8sClient.Update(ctx, nsObj)).To(Succeed())
		Eventually(func() error {
			return clientAs("alice").Create(ctx, gpuJob(other, "j", 1, 1).Obj(), client.DryRunAll)
		}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("[team.sandbox] sandboxes get no GPUs")))
	})

	It("judges the next Job by a namespace's new GPU cap, without a restart", func() {
		capped := namespace(map[string]string{"kueue-guard.io/max-gpus": "8"}, nil)
		localQueue(capped, "lq")
		Eventually(func() error {
			return clientAs("alice").Create(ctx, gpuJob(capped, "j", 2, 2).Obj(), client.DryRunAll)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		nsObj := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: capped}, nsObj)).To(Succeed())
		nsObj.Labels["kueue-guard.io/max-gpus"] = "2"
		Expect(k8sClient.Update(ctx, nsObj)).To(Succeed())
		Eventually(func() error {
			return clientAs("alice").Create(ctx, gpuJob(capped, "j", 2, 2).Obj(), client.DryRunAll)
		}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring(
			`[kueue_guard.max_gpus_per_workload] requests 4 GPUs (nvidia.com/gpu) but namespace "` + capped + `" allows at most 2`)))
	})

	// A policy that denies every update must not hold an object Terminating:
	// its finalizer must come off. A tenant cannot claim the deletion mark to
	// slip an update past the policies: only a DELETE sets it.
	It("never denies the update of an object being deleted, and the deletion mark cannot be forged", func() {
		frozen := namespace(nil, nil)
		localQueue(frozen, "lq")
		file := filepath.Join(policyDir, "frozen.rego")
		Expect(os.WriteFile(file, []byte(`# METADATA
# title: Frozen namespace
# custom:
#   match:
#     operations: [UPDATE]
#     namespaces: [`+frozen+`]
package team.frozen

deny contains "nothing changes here" if true
`), 0o644)).To(Succeed())
		DeferCleanup(func() { Expect(os.Remove(file)).To(Succeed()) })

		alice := clientAs("alice")
		job := fixtures.Job(frozen, "held").Queue("lq").Label("kueue.x-k8s.io/max-exec-time-seconds", "60").Obj()
		job.SetFinalizers([]string{"example.com/hold"})
		Expect(alice.Create(ctx, job)).To(Succeed())
		Eventually(func() error {
			cur := &batchv1.Job{}
			Expect(alice.Get(ctx, client.ObjectKeyFromObject(job), cur)).To(Succeed())
			cur.Labels["touched"] = "yes"
			return alice.Update(ctx, cur)
		}).WithTimeout(15 * time.Second).Should(MatchError(ContainSubstring("[team.frozen] nothing changes here")))

		// Forging the mark in an update: the API server refuses it before
		// admission (and kueue-guard reads the mark from the stored object).
		forged := &batchv1.Job{}
		Expect(alice.Get(ctx, client.ObjectKeyFromObject(job), forged)).To(Succeed())
		forged.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		forged.Labels["forged"] = "yes"
		Expect(alice.Update(ctx, forged)).To(MatchError(Or(
			ContainSubstring("metadata.deletionTimestamp"), ContainSubstring("[team.frozen]"))))
		Expect(alice.Get(ctx, client.ObjectKeyFromObject(job), forged)).To(Succeed())
		Expect(forged.Labels).NotTo(HaveKey("forged"))

		// A real deletion: the finalizer comes off despite the policy.
		Expect(alice.Delete(ctx, job)).To(Succeed())
		deleting := &batchv1.Job{}
		Expect(alice.Get(ctx, client.ObjectKeyFromObject(job), deleting)).To(Succeed())
		Expect(deleting.DeletionTimestamp).NotTo(BeNil())
		deleting.Finalizers = nil
		Expect(alice.Update(ctx, deleting)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(alice.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}))
		}).WithTimeout(10 * time.Second).Should(BeTrue())
	})

	It("keeps serving the last good set when a broken policy is written, and picks up the fix without restart", func() {
		loadErrors := metric("kueue_guard_policy_set_load_errors_total")
		broken := filepath.Join(policyDir, "team-rule.rego")
		Expect(os.WriteFile(broken, []byte("package team.rule\n\ndeny contains msg if {\n\tmsg := \n}\n"), 0o644)).To(Succeed())
		Eventually(func() float64 { return metric("kueue_guard_policy_set_load_errors_total") }).
			WithTimeout(15*time.Second).Should(BeNumerically(">", loadErrors), "the broken set is reported")
		invalid(k8sClient.Create(ctx, gpuJob(ns, "still-too-big", 5, 2).Obj()), fitsField,
			"[kueue_guard.fits_cluster_queue]")

		fixed := "package team.rule\n\n# METADATA\n# title: no nightly jobs in ml\ndeny contains {\"msg\": \"nightly jobs are not allowed here\", " +
			"\"field\": \"metadata.labels.schedule\"} if {\n\tinput.object.metadata.labels.schedule == \"nightly\"\n}\n"
		Expect(os.WriteFile(broken, []byte(fixed), 0o644)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Create(ctx, fixtures.Job(ns, "nightly").Queue("lq").Label("schedule", "nightly").Obj(), client.DryRunAll)
		}).WithTimeout(15 * time.Second).Should(MatchError(ContainSubstring("[team.rule] nightly jobs are not allowed here")))
	})

	// A policy that reads the clock would judge the webhook's request and a
	// later review differently (and could be timed to let a job through); one
	// that builds numbers.range(0, 1e9) would exhaust the server's memory. The
	// set is refused and the last good one keeps judging.
	It("refuses a policy calling a built-in that is not offered, and keeps serving the last good set", func() {
		for _, src := range []string{
			"package team.clock\n\ndeny contains \"after hours\" if time.now_ns() > 0\n",
			"package team.range\n\ndeny contains \"big\" if count(numbers.range(0, 1000000000)) > 0\n",
		} {
			loadErrors := metric("kueue_guard_policy_set_load_errors_total")
			file := filepath.Join(policyDir, "builtin.rego")
			Expect(os.WriteFile(file, []byte(src), 0o644)).To(Succeed())
			Eventually(func() float64 { return metric("kueue_guard_policy_set_load_errors_total") }).
				WithTimeout(15*time.Second).Should(BeNumerically(">", loadErrors), "the set is refused: %s", src)
			invalid(k8sClient.Create(ctx, gpuJob(ns, "still-too-big-"+fmt.Sprint(loadErrors), 5, 2).Obj(), client.DryRunAll), fitsField,
				"[kueue_guard.fits_cluster_queue]")
			Expect(os.Remove(file)).To(Succeed())
		}
	})

	It("reports the policy a denial comes from and its field", func() {
		err := k8sClient.Create(ctx, fixtures.Job(ns, "n2").Queue("lq").Label("schedule", "nightly").Obj())
		invalid(err, "metadata.labels.schedule", "[team.rule] nightly jobs are not allowed here")
	})
})

// gpuUsage is a ClusterQueue's usage of total GPUs of its default flavor, as
// Kueue's status reports it.
func gpuUsage(total string) []kueue.FlavorUsage {
	return []kueue.FlavorUsage{{Name: "default-flavor", Resources: []kueue.ResourceUsage{
		{Name: "nvidia.com/gpu", Total: resource.MustParse(total)}}}}
}
