package workload_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Summarize on the cases that are not pod-set arithmetic: labels, priority,
// safety and malformed input.
var _ = Describe("Summarize", func() {
	ctx := context.Background()

	It("fills in kind, framework, queue and priority class from the catalog", func() {
		obj := job(1, 0, cpu("1"))
		obj.SetLabels(map[string]string{
			integrations.QueueNameLabel:     "gpu",
			integrations.PriorityClassLabel: "high",
		})
		s, err := workload.Summarize(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Kind).To(Equal(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}))
		Expect(s.Framework).To(Equal("batch/job"))
		Expect(s.QueueName).To(Equal("gpu"))
		Expect(s.PriorityClass).To(Equal("high"))
		Expect(s.Priority).To(Equal(workload.Priority{Class: "high", Source: workload.PrioritySourceWorkload}))
	})

	It("takes the priority from the pods' priorityClassName without a WorkloadPriorityClass label, as Kueue does", func() {
		obj := job(1, 0, cpu("1"))
		Expect(unstructured.SetNestedField(obj.Object, "system-cluster-critical", "spec", "template", "spec", "priorityClassName")).To(Succeed())
		s, err := workload.Summarize(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Priority).To(Equal(workload.Priority{Class: "system-cluster-critical", Source: workload.PrioritySourcePod}))

		obj.SetLabels(map[string]string{integrations.PriorityClassLabel: "low"})
		s, err = workload.Summarize(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Priority).To(Equal(workload.Priority{Class: "low", Source: workload.PrioritySourceWorkload}), "the label wins")
	})

	DescribeTable("takes the priority an MPIJob's or Kubeflow job's adapter chooses: its scheduling policy's class first",
		func(obj *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(obj.Object, "critical", "spec", "runPolicy", "schedulingPolicy", "priorityClass")).To(Succeed())
			s, err := workload.Summarize(ctx, obj)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Priority).To(Equal(workload.Priority{Class: "critical", Source: workload.PrioritySourcePod}))
		},
		Entry("MPIJob", object("kubeflow.org/v2beta1", "MPIJob", map[string]any{"mpiReplicaSpecs": map[string]any{
			"Launcher": replicaSpec(1, cpu("1")), "Worker": replicaSpec(4, gpuLimit("2"))}})),
		Entry("PyTorchJob", kubeflowJob("PyTorchJob", "pytorchReplicaSpecs", map[string]any{
			"Master": replicaSpec(1, cpu("2")), "Worker": replicaSpec(3, gpuLimit("1"))})),
	)

	It("reads a CronJob's queue from its jobTemplate and reports the Job framework", func() {
		obj := object("batch/v1", "CronJob", map[string]any{
			"schedule": "@daily",
			"jobTemplate": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{integrations.QueueNameLabel: "nightly"}},
				"spec":     jobSpec(1, 0, cpu("1")),
			},
		})
		obj.SetLabels(map[string]string{integrations.QueueNameLabel: "ignored"})
		s, err := workload.Summarize(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.QueueName).To(Equal("nightly"))
		Expect(s.Framework).To(Equal("batch/job"))
	})

	It("never modifies the object it summarizes", func() {
		obj := jobSet(replicatedJob("workers", 0, 0, cpu("1")))
		before := obj.DeepCopy()
		_, err := workload.Summarize(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.Object).To(Equal(before.Object))
	})

	It("ignores a client-supplied status", func() {
		obj := object("workload.codeflare.dev/v1beta2", "AppWrapper", map[string]any{
			"components": []any{map[string]any{"template": map[string]any{
				"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
				"spec": podSpec(ctr("main", rl{"cpu": "1"}, nil)),
			}}},
		})
		obj.Object["status"] = map[string]any{"componentStatus": []any{map[string]any{
			"name": "p", "kind": "Pod", "apiVersion": "v1",
			"podSets": []any{map[string]any{"replicas": int64(0), "path": "template.spec"}},
		}}}
		s, err := workload.Summarize(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.PodSets).To(equalPodSets([]workload.PodSet{ps("demo-0", 1, rl{"cpu": "1"})}))
	})

	It("is safe for concurrent use on shared objects", func() {
		objs := []*unstructured.Unstructured{
			job(0, 0, gpuLimit("1")),
			jobSet(replicatedJob("w", 0, 2, cpu("1"))),
			kubeflowJob("PyTorchJob", "pytorchReplicaSpecs", map[string]any{"Worker": replicaSpec(2, cpu("1"))}),
			object("ray.io/v1", "RayCluster", rayClusterSpec(workerGroup("w", 2, 0, cpu("1")))),
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8*len(objs))
		for range 8 {
			for _, obj := range objs {
				wg.Go(func() {
					_, err := workload.Summarize(ctx, obj)
					errs <- err
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
	})

	It("rejects kinds outside the catalog with ErrUnknownKind", func() {
		_, err := workload.Summarize(ctx, object("apps/v1", "DaemonSet", map[string]any{"template": cpu("1")}))
		Expect(err).To(MatchError(workload.ErrUnknownKind))
		Expect(err.Error()).To(ContainSubstring("DaemonSet.apps"))
	})

	It("rejects a version of a catalog kind it does not read", func() {
		_, err := workload.Summarize(ctx, kubeflowJob("MPIJob", "mpiReplicaSpecs", map[string]any{
			"Worker": replicaSpec(2, cpu("1")),
		}))
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, workload.ErrUnknownKind)).To(BeFalse())
		Expect(err.Error()).To(ContainSubstring("kubeflow.org/v2beta1"))
	})

	It("rejects a nil object", func() {
		_, err := workload.Summarize(ctx, nil)
		Expect(err).To(HaveOccurred())
	})

	It("reports totals that overflow instead of wrapping them", func() {
		_, err := workload.Summarize(ctx, job(3, 0, tmpl(podSpec(ctr("main", rl{"memory": "4Ei"}, nil)))))
		Expect(err).To(MatchError(ContainSubstring("overflows")))
	})

	It("reads fields case-sensitively, as the API server does", func() {
		// The API server drops "Parallelism": Kueue sees the default, 1 pod.
		s, err := workload.Summarize(ctx, object("batch/v1", "Job", map[string]any{"Parallelism": int64(50), "template": cpu("1")}))
		Expect(err).NotTo(HaveOccurred())
		Expect(s.PodSets).To(HaveLen(1))
		Expect(s.PodSets[0].Count).To(Equal(int32(1)))
	})

	DescribeTable("malformed objects give an error naming the object, never a panic",
		func(obj *unstructured.Unstructured, wantPrefix string) {
			var err error
			Expect(func() { _, err = workload.Summarize(ctx, obj) }).NotTo(Panic())
			Expect(err).To(MatchError(HavePrefix(wantPrefix)))
		},
		Entry("Job parallelism is a string",
			object("batch/v1", "Job", map[string]any{"parallelism": "five", "template": cpu("1")}),
			"computing pod sets of Job team-a/demo: "),
		Entry("Job template is a string",
			object("batch/v1", "Job", map[string]any{"template": "nginx"}),
			"computing pod sets of Job team-a/demo: "),
		Entry("spec is a list",
			func() *unstructured.Unstructured {
				u := object("apps/v1", "Deployment", nil)
				u.Object["spec"] = []any{"x"}
				return u
			}(),
			"computing pod sets of Deployment team-a/demo: "),
		Entry("a container's requests are not quantities",
			job(1, 0, tmpl(podSpec(ctr("main", rl{"cpu": "lots"}, nil)))),
			"computing pod sets of Job team-a/demo: "),
		Entry("JobSet replicatedJobs is an object",
			object("jobset.x-k8s.io/v1alpha2", "JobSet", map[string]any{"replicatedJobs": map[string]any{"a": "b"}}),
			"computing pod sets of JobSet team-a/demo: "),
		Entry("RayJob worker group replicas is a list",
			object("ray.io/v1", "RayJob", map[string]any{"rayClusterSpec": rayClusterSpec(
				map[string]any{"groupName": "w", "replicas": []any{int64(1)}, "template": cpu("1")})}),
			"computing pod sets of RayJob team-a/demo: "),
		Entry("metadata is a string",
			func() *unstructured.Unstructured {
				u := job(1, 0, cpu("1"))
				u.Object["metadata"] = "demo"
				return u
			}(),
			"computing pod sets of Job (unnamed): "),
		Entry("AppWrapper component without a template",
			object("workload.codeflare.dev/v1beta2", "AppWrapper", map[string]any{"components": []any{map[string]any{}}}),
			"computing pod sets of AppWrapper team-a/demo: "),
		Entry("LeaderWorkerSet size 0",
			object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{
				"leaderWorkerTemplate": map[string]any{"size": int64(0), "workerTemplate": cpu("1")},
			}),
			"computing pod sets of LeaderWorkerSet team-a/demo: "),
		Entry("LeaderWorkerSet groups × size beyond int32",
			object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{
				"replicas":             int64(2147483647),
				"leaderWorkerTemplate": map[string]any{"size": int64(2), "workerTemplate": cpu("1")},
			}),
			"computing pod sets of LeaderWorkerSet team-a/demo: "),
		Entry("a negative count",
			object("batch/v1", "Job", map[string]any{"parallelism": int64(-2), "template": cpu("1")}),
			"computing requests of Job team-a/demo: "),
	)

	Describe("realistic manifests from testdata", func() {
		load := func(name string) *unstructured.Unstructured {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			Expect(err).NotTo(HaveOccurred())
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
			return obj
		}

		It("summarizes a PyTorchJob as written for kubectl apply", func() {
			s, err := workload.Summarize(ctx, load("pytorchjob.yaml"))
			Expect(err).NotTo(HaveOccurred())
			Expect(s.QueueName).To(Equal("ml-gpu"))
			Expect(s.PodSets).To(equalPodSets([]workload.PodSet{
				ps("master", 1, rl{"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}),
				ps("worker", 3, rl{"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}),
			}))
			Expect(s.TotalRequests).To(equalList(rl{"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"}))
		})

		It("summarizes an undefaulted JobSet with an init container and a sidecar", func() {
			s, err := workload.Summarize(ctx, load("jobset.yaml"))
			Expect(err).NotTo(HaveOccurred())
			Expect(s.QueueName).To(Equal("research"))
			Expect(s.PriorityClass).To(Equal("batch-low"))
			Expect(s.PodSets).To(equalPodSets([]workload.PodSet{
				// coordinator: replicas and parallelism defaulted to 1; the
				// 2-CPU init container outweighs 1 CPU + 250m sidecar.
				ps("coordinator", 1, rl{"cpu": "2", "memory": "1Gi"}),
				// workers: 2 replicas × parallelism 4; 2 CPUs + 250m sidecar,
				// memory from the limit, GPU from the limit.
				ps("workers", 8, rl{"cpu": "2250m", "memory": "8320Mi", "nvidia.com/gpu": "1"}),
			}))
			Expect(s.TotalRequests).To(equalList(rl{"cpu": "20", "memory": "66Gi", "nvidia.com/gpu": "8"}))
		})
	})
})
