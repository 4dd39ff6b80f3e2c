package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/simwarn"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

type builder func(ns, name string) fixtures.Object

// cacheSettle waits until the server's informer has seen a namespace or queue
// created just before: an admission that raced the watch would see no default.
// It polls through the webhook itself (a dry-run create), never sleeps blindly.
func eventuallyDefaulted(ns string, want string) {
	Eventually(func(g Gomega) {
		probe := fixtures.Job(ns, "probe").Obj()
		g.Expect(k8sClient.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(queueOf(probe)).To(Equal(want))
	}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}

var _ = Describe("queue-name defaulting through the API server", func() {
	allKinds := []TableEntry{
		Entry("Job", fixtures.Job),
		Entry("CronJob (label in the job template)", fixtures.CronJob),
		Entry("Pod", fixtures.Pod),
		Entry("Deployment", fixtures.Deployment),
		Entry("StatefulSet", fixtures.StatefulSet),
		Entry("JobSet", fixtures.JobSet),
		Entry("RayJob", fixtures.RayJob),
		Entry("RayCluster", fixtures.RayCluster),
		Entry("MPIJob", fixtures.MPIJob),
		Entry("TrainJob", fixtures.TrainJob),
	}
	// Kinds the managed profile does not support: defaulting labels them, and the
	// integration guard then rejects them (see guards_test.go), so they are
	// checked here with the mutating path alone.
	unsupportedKinds := []TableEntry{
		Entry("PyTorchJob", fixtures.PyTorchJob),
		Entry("AppWrapper", fixtures.AppWrapper),
		Entry("LeaderWorkerSet", fixtures.LeaderWorkerSet),
	}

	Context("in a namespace annotated with a default queue", func() {
		var ns string
		BeforeEach(func() {
			ns = namespace(nil, map[string]string{guard.DefaultQueueAnnotation: "team-queue",
				guard.DefaultPriorityClassAnnotation: "batch-low"})
			localQueue(ns, "team-queue")
			eventuallyDefaulted(ns, "team-queue")
		})

		DescribeTable("client.Create comes back labeled", func(build builder) {
			obj := build(ns, "wl").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("team-queue"))
			Expect(defaultedBy(obj)).To(Equal(guard.SourceNamespaceAnnotation))
			Expect(priorityOf(obj)).To(Equal("batch-low"))
		}, allKinds)

		DescribeTable("kubectl apply --dry-run=server comes back labeled", func(build builder) {
			manifest, err := yaml.Marshal(build(ns, "applied").Obj().Object)
			Expect(err).NotTo(HaveOccurred())
			stdout, stderr, err := env.Kubectl(manifest, "apply", "--dry-run=server", "-o", "json", "-f", "-")
			Expect(err).NotTo(HaveOccurred(), stderr)
			out := &unstructured.Unstructured{}
			Expect(json.Unmarshal([]byte(stdout), &out.Object)).To(Succeed())
			Expect(queueOf(out)).To(Equal("team-queue"))
			// Only the simulate warning a dry run gets (simulation.warn: dryRun).
			for l := range strings.SplitSeq(strings.TrimSpace(stderr), "\n") {
				Expect(l).To(Or(BeEmpty(), ContainSubstring(simwarn.Prefix)))
			}
		}, allKinds)

		DescribeTable("unsupported kinds are labeled too, so the guard can reject them", func(build builder) {
			obj := build(ns, "wl").Obj()
			err := k8sClient.Create(ctx, obj)
			Expect(err).To(MatchError(ContainSubstring(`admission webhook "validate-workloads.kueue-guard.io" denied the request`)))
			Expect(err).To(MatchError(ContainSubstring("[kueue_guard.unsupported_integration]")))
		}, unsupportedKinds)

		It("never overwrites a queue the user set", func() {
			obj := fixtures.Job(ns, "explicit").Queue("other").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("other"))
			Expect(defaultedBy(obj)).To(BeEmpty())
			Expect(priorityOf(obj)).To(Equal("batch-low"), "the namespace's priority class still applies")
		})

		It("never overwrites a priority class the user set", func() {
			obj := fixtures.Job(ns, "prio").Label("kueue.x-k8s.io/priority-class", "urgent").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("team-queue"))
			Expect(priorityOf(obj)).To(Equal("urgent"))
		})

		It("leaves a Pod whose controller is a Job alone when the Job controller creates it", func() {
			obj := fixtures.Pod(ns, "job-pod").ControlledBy("batch/v1", "Job", "parent").Obj()
			Expect(clientAs(testenv.ControllerUsername("job")).Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(BeEmpty())
		})

		It("judges the same Pod when anyone else creates it: an owner reference is a field the requester wrote", func() {
			obj := fixtures.Pod(ns, "forged-pod").ControlledBy("batch/v1", "Job", "parent").Obj()
			err := k8sClient.Create(ctx, obj)
			Expect(err).To(HaveOccurred(), "Kueue would count it as part of the Job and never queue it")
			Expect(err.Error()).To(ContainSubstring("[" + guard.RuleUntrustedOwner + "]"))
		})

		It("leaves a Job whose controller is a JobSet alone when the JobSet operator creates it", func() {
			obj := fixtures.Job(ns, "jobset-job").ControlledBy("jobset.x-k8s.io/v1alpha2", "JobSet", "parent").Obj()
			Expect(clientAs("system:serviceaccount:jobset-system:jobset-controller-manager").Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(BeEmpty())
		})

		It("labels a Job created by a CronJob: it is a top-level workload", func() {
			obj := fixtures.Job(ns, "cron-run").ControlledBy("batch/v1", "CronJob", "nightly").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("team-queue"))
		})

		It("does not mutate on UPDATE", func() {
			obj := fixtures.Job(ns, "updated").Queue("team-queue").Obj()
			Expect(unstructured.SetNestedField(obj.Object, true, "spec", "suspend")).To(Succeed())
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			labels := obj.GetLabels()
			delete(labels, "kueue.x-k8s.io/queue-name")
			obj.SetLabels(labels)
			// Only a trusted controller may take a workload out of its queue in a
			// namespace with a default (see test/tenant); Kueue's own identity may.
			Expect(clientAs(config.KueueServiceAccount(config.DefaultKueueNamespace)).Update(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(BeEmpty())
		})
	})

	Context("in a namespace without any default", func() {
		DescribeTable("objects are left alone", func(build builder) {
			ns := namespace(nil, nil)
			obj := build(ns, "plain").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(BeEmpty())
			Expect(obj.GetAnnotations()).NotTo(HaveKey(guard.DefaultedByAnnotation))
		}, append(allKinds, unsupportedKinds...))
	})

	It("follows Kueue's convention: a LocalQueue named default", func() {
		ns := namespace(nil, nil)
		localQueue(ns, "default")
		eventuallyDefaulted(ns, "default")
		obj := fixtures.Job(ns, "job").Obj()
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		Expect(queueOf(obj)).To(Equal("default"))
		Expect(defaultedBy(obj)).To(Equal(guard.SourceKueueDefault))
	})

	It("warns, through kubectl, when the default LocalQueue does not exist", func() {
		ns := namespace(nil, map[string]string{guard.DefaultQueueAnnotation: "missing"})
		eventuallyDefaulted(ns, "missing")
		manifest, err := yaml.Marshal(fixtures.Job(ns, "orphan").Obj().Object)
		Expect(err).NotTo(HaveOccurred())
		stdout, stderr, err := env.Kubectl(manifest, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stdout).To(ContainSubstring("job.batch/orphan created"))
		Expect(stderr).To(ContainSubstring(fmt.Sprintf(
			`Warning: LocalQueue "missing" not found in namespace %q: the workload stays pending until it exists`, ns)))

		c, warnings := clientWithWarnings()
		obj := fixtures.Job(ns, "orphan-2").Obj()
		Expect(c.Create(ctx, obj)).To(Succeed())
		Expect(queueOf(obj)).To(Equal("missing"))
		Expect(warnings.All()).To(ContainSubstring(`LocalQueue "missing" not found`))
	})

	Context("with the gpu-jobs rule (team=ml, requests nvidia.com/gpu → gpu)", func() {
		var ns string
		BeforeEach(func() {
			ns = namespace(map[string]string{"team": "ml"}, nil)
			localQueue(ns, "gpu")
			localQueue(ns, "default")
			eventuallyDefaulted(ns, "default")
		})

		It("routes a GPU job to the GPU queue", func() {
			obj := fixtures.Job(ns, "train").Requests("nvidia.com/gpu", "2").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("gpu"))
			Expect(defaultedBy(obj)).To(Equal("rule/gpu-jobs"))
		})

		It("routes a GPU JobSet to the GPU queue", func() {
			obj := fixtures.JobSet(ns, "train-set").Requests("nvidia.com/gpu", "1").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("gpu"))
		})

		It("sends a CPU job to Kueue's default queue", func() {
			obj := fixtures.Job(ns, "etl").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("default"))
		})
	})

	It("never touches kube-system (excluded by the webhook's namespace selector)", func() {
		obj := fixtures.Job("kube-system", "system-job").Obj()
		// Even if kube-system had a default LocalQueue, the API server must not call us.
		localQueue("kube-system", "default")
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		Expect(queueOf(obj)).To(BeEmpty())
	})
})

var _ = Describe("the admission path", func() {
	It("makes no API call: the informer cache is the only source", func() {
		ns := namespace(map[string]string{"team": "ml"}, map[string]string{guard.DefaultQueueAnnotation: "q"})
		localQueue(ns, "q")
		eventuallyDefaulted(ns, "q")
		before := serverRequests.snapshot()
		for i := range 20 {
			obj := fixtures.JobSet(ns, fmt.Sprintf("burst-%d", i)).Requests("nvidia.com/gpu", "1").Obj()
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			Expect(queueOf(obj)).To(Equal("q"))
		}
		Expect(serverRequests.snapshot()[len(before):]).To(BeEmpty(), "the server called the API server while admitting")
		Expect(before).NotTo(BeEmpty(), "the counter must see the informers' initial lists")
	})
})
