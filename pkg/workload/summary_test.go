package workload_test

import (
	"context"

	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// equalPodSets compares pod sets with quantities compared by value and a nil
// resource list equal to an empty one.
func equalPodSets(want []workload.PodSet) OmegaMatcher {
	return BeComparableTo(want, cmpopts.EquateEmpty())
}

func equalList(want rl) OmegaMatcher {
	return BeComparableTo(list(want), cmpopts.EquateEmpty())
}

var _ = Describe("Summarize", func() {
	ctx := context.Background()

	DescribeTable("pod sets, per-pod and total requests as Kueue computes them",
		func(obj *unstructured.Unstructured, want []workload.PodSet, wantTotal rl) {
			s, err := workload.Summarize(ctx, obj)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.PodSets).To(equalPodSets(want))
			Expect(s.TotalRequests).To(equalList(wantTotal))
		},

		// batch/v1 Job
		Entry("Job: parallelism 5, 2 GPUs limit and no request",
			job(5, 0, gpuLimit("2")),
			[]workload.PodSet{ps("main", 5, rl{"nvidia.com/gpu": "2"})},
			rl{"nvidia.com/gpu": "10"}),
		Entry("Job: completions below parallelism bound the count",
			job(5, 3, cpu("1")),
			[]workload.PodSet{ps("main", 3, rl{"cpu": "1"})},
			rl{"cpu": "3"}),
		Entry("Job: not defaulted (nil parallelism and completions) counts one pod, no panic",
			job(0, 0, cpu("500m")),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "500m"})},
			rl{"cpu": "500m"}),
		Entry("Job: completions only, parallelism defaults to 1",
			job(0, 4, cpu("1")),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "1"})},
			rl{"cpu": "1"}),
		Entry("Job: an init container larger than the containers counts by max",
			job(2, 0, tmpl(withInit(
				podSpec(ctr("main", rl{"cpu": "1", "memory": "1Gi"}, nil)),
				ctr("setup", rl{"cpu": "3", "memory": "512Mi"}, nil)))),
			[]workload.PodSet{ps("main", 2, rl{"cpu": "3", "memory": "1Gi"})},
			rl{"cpu": "6", "memory": "2Gi"}),
		Entry("Job: a sidecar adds to the containers",
			job(1, 0, tmpl(withInit(
				podSpec(ctr("main", rl{"cpu": "1"}, nil)),
				sidecar(ctr("proxy", rl{"cpu": "500m", "memory": "128Mi"}, nil))))),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "1500m", "memory": "128Mi"})},
			rl{"cpu": "1500m", "memory": "128Mi"}),
		Entry("Job: pod overhead is added",
			job(2, 0, tmpl(withOverhead(
				podSpec(ctr("main", rl{"cpu": "1", "memory": "1Gi"}, nil)),
				rl{"cpu": "250m", "memory": "64Mi"}))),
			[]workload.PodSet{ps("main", 2, rl{"cpu": "1250m", "memory": "1088Mi"})},
			rl{"cpu": "2500m", "memory": "2176Mi"}),
		Entry("Job: limits stand in for missing requests only",
			job(1, 0, tmpl(podSpec(ctr("main", rl{"cpu": "1"}, rl{"cpu": "2", "memory": "4Gi"})))),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "1", "memory": "4Gi"})},
			rl{"cpu": "1", "memory": "4Gi"}),

		// batch/v1 CronJob
		Entry("CronJob: its jobTemplate as a Job",
			object("batch/v1", "CronJob", map[string]any{
				"schedule":    "*/5 * * * *",
				"jobTemplate": map[string]any{"spec": jobSpec(2, 0, cpu("1"))},
			}),
			[]workload.PodSet{ps("main", 2, rl{"cpu": "1"})},
			rl{"cpu": "2"}),
		Entry("CronJob: not defaulted",
			object("batch/v1", "CronJob", map[string]any{
				"schedule":    "@hourly",
				"jobTemplate": map[string]any{"spec": jobSpec(0, 0, gpuLimit("1"))},
			}),
			[]workload.PodSet{ps("main", 1, rl{"nvidia.com/gpu": "1"})},
			rl{"nvidia.com/gpu": "1"}),

		// v1 Pod
		Entry("Pod: a single pod",
			object("v1", "Pod", podSpec(ctr("main", rl{"cpu": "500m", "memory": "256Mi"}, nil))),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "500m", "memory": "256Mi"})},
			rl{"cpu": "500m", "memory": "256Mi"}),

		// apps/v1
		Entry("Deployment: one pod set of all replicas",
			object("apps/v1", "Deployment", map[string]any{"replicas": int64(3), "template": cpu("1")}),
			[]workload.PodSet{ps("main", 3, rl{"cpu": "1"})},
			rl{"cpu": "3"}),
		Entry("Deployment: replicas default to 1",
			object("apps/v1", "Deployment", map[string]any{"template": cpu("1")}),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "1"})},
			rl{"cpu": "1"}),
		Entry("StatefulSet: one pod group of all replicas",
			object("apps/v1", "StatefulSet", map[string]any{"replicas": int64(2), "template": gpuLimit("1")}),
			[]workload.PodSet{ps("main", 2, rl{"nvidia.com/gpu": "1"})},
			rl{"nvidia.com/gpu": "2"}),
		Entry("StatefulSet: replicas default to 1",
			object("apps/v1", "StatefulSet", map[string]any{"template": cpu("2")}),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "2"})},
			rl{"cpu": "2"}),

		// LeaderWorkerSet
		Entry("LeaderWorkerSet: leader and workers of every group",
			object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{
				"replicas": int64(2),
				"leaderWorkerTemplate": map[string]any{
					"size":           int64(4),
					"leaderTemplate": cpu("1"),
					"workerTemplate": gpuLimit("1"),
				},
			}),
			[]workload.PodSet{ps("leader", 2, rl{"cpu": "1"}), ps("worker", 6, rl{"nvidia.com/gpu": "1"})},
			rl{"cpu": "2", "nvidia.com/gpu": "6"}),
		Entry("LeaderWorkerSet: no leader template, replicas and size default to 1",
			object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{
				"leaderWorkerTemplate": map[string]any{"workerTemplate": cpu("1")},
			}),
			[]workload.PodSet{ps("main", 1, rl{"cpu": "1"})},
			rl{"cpu": "1"}),

		// JobSet
		Entry("JobSet: 2 replicatedJobs × replicas × parallelism",
			jobSet(replicatedJob("driver", 1, 1, cpu("1")), replicatedJob("workers", 2, 4, gpuLimit("1"))),
			[]workload.PodSet{ps("driver", 1, rl{"cpu": "1"}), ps("workers", 8, rl{"nvidia.com/gpu": "1"})},
			rl{"cpu": "1", "nvidia.com/gpu": "8"}),
		Entry("JobSet: replicas and parallelism default to 1",
			jobSet(replicatedJob("workers", 0, 0, cpu("1"))),
			[]workload.PodSet{ps("workers", 1, rl{"cpu": "1"})},
			rl{"cpu": "1"}),
		Entry("JobSet: an explicit 0 replicas stays 0",
			jobSet(func() map[string]any {
				rj := replicatedJob("idle", 0, 2, cpu("1"))
				rj["replicas"] = int64(0)
				return rj
			}()),
			[]workload.PodSet{ps("idle", 0, rl{"cpu": "1"})},
			rl{"cpu": "0"}), // Kueue keeps the resource, scaled to 0

		// Ray
		Entry("RayCluster: head and worker groups (numOfHosts multiplies)",
			object("ray.io/v1", "RayCluster", rayClusterSpec(
				workerGroup("gpu-group", 3, 0, gpuLimit("1")),
				workerGroup("cpu-group", 2, 2, cpu("1")))),
			[]workload.PodSet{
				ps("head", 1, rl{"cpu": "2"}),
				ps("gpu-group", 3, rl{"nvidia.com/gpu": "1"}),
				ps("cpu-group", 4, rl{"cpu": "1"}),
			},
			rl{"cpu": "6", "nvidia.com/gpu": "3"}),
		Entry("RayCluster: worker replicas default to 0 as in the CRD",
			object("ray.io/v1", "RayCluster", rayClusterSpec(workerGroup("workers", 0, 0, cpu("1")))),
			[]workload.PodSet{ps("head", 1, rl{"cpu": "2"}), ps("workers", 0, rl{"cpu": "1"})},
			rl{"cpu": "2"}),
		Entry("RayJob: the cluster's head and workers, and Kueue's default submitter (K8sJobMode, the CRD's default)",
			object("ray.io/v1", "RayJob", map[string]any{
				"entrypoint":     "python train.py",
				"rayClusterSpec": rayClusterSpec(workerGroup("workers", 2, 0, gpuLimit("2"))),
			}),
			[]workload.PodSet{ps("head", 1, rl{"cpu": "2"}), ps("workers", 2, rl{"nvidia.com/gpu": "2"}),
				ps("submitter", 1, rl{"cpu": "500m", "memory": "200Mi"})},
			rl{"cpu": "2500m", "memory": "200Mi", "nvidia.com/gpu": "4"}),
		Entry("RayJob: GPUs in the submitter pod template are counted",
			object("ray.io/v1", "RayJob", map[string]any{
				"entrypoint":           "python train.py",
				"rayClusterSpec":       rayClusterSpec(workerGroup("workers", 1, 0, gpuLimit("1"))),
				"submitterPodTemplate": gpuLimit("1"),
			}),
			[]workload.PodSet{ps("head", 1, rl{"cpu": "2"}), ps("workers", 1, rl{"nvidia.com/gpu": "1"}),
				ps("submitter", 1, rl{"nvidia.com/gpu": "1"})},
			rl{"cpu": "2", "nvidia.com/gpu": "2"}),
		Entry("RayJob: no submitter pod set outside K8sJobMode",
			object("ray.io/v1", "RayJob", map[string]any{
				"entrypoint":     "python train.py",
				"submissionMode": "HTTPMode",
				"rayClusterSpec": rayClusterSpec(workerGroup("workers", 2, 0, gpuLimit("2"))),
			}),
			[]workload.PodSet{ps("head", 1, rl{"cpu": "2"}), ps("workers", 2, rl{"nvidia.com/gpu": "2"})},
			rl{"cpu": "2", "nvidia.com/gpu": "4"}),
		Entry("RayJob: on an existing cluster it has no pod sets",
			object("ray.io/v1", "RayJob", map[string]any{
				"entrypoint":      "python train.py",
				"clusterSelector": map[string]any{"ray.io/cluster": "shared"},
			}),
			[]workload.PodSet{},
			rl{}),
		Entry("RayService: the cluster's head and workers",
			object("ray.io/v1", "RayService", map[string]any{
				"rayClusterConfig": rayClusterSpec(workerGroup("serve", 2, 0, cpu("1"))),
			}),
			[]workload.PodSet{ps("head", 1, rl{"cpu": "2"}), ps("serve", 2, rl{"cpu": "1"})},
			rl{"cpu": "4"}),

		// MPI operator
		Entry("MPIJob: launcher and workers",
			object("kubeflow.org/v2beta1", "MPIJob", map[string]any{"mpiReplicaSpecs": map[string]any{
				"Launcher": replicaSpec(1, cpu("1")),
				"Worker":   replicaSpec(4, gpuLimit("2")),
			}}),
			[]workload.PodSet{ps("launcher", 1, rl{"cpu": "1"}), ps("worker", 4, rl{"nvidia.com/gpu": "2"})},
			rl{"cpu": "1", "nvidia.com/gpu": "8"}),
		Entry("MPIJob: replicas default to 1, a null replica spec is dropped",
			object("kubeflow.org/v2beta1", "MPIJob", map[string]any{"mpiReplicaSpecs": map[string]any{
				"Launcher": replicaSpec(0, cpu("1")),
				"Worker":   nil,
			}}),
			[]workload.PodSet{ps("launcher", 1, rl{"cpu": "1"})},
			rl{"cpu": "1"}),

		// Kubeflow training operator v1
		Entry("PyTorchJob: master and workers",
			kubeflowJob("PyTorchJob", "pytorchReplicaSpecs", map[string]any{
				"Master": replicaSpec(1, cpu("2")),
				"Worker": replicaSpec(3, gpuLimit("1")),
			}),
			[]workload.PodSet{ps("master", 1, rl{"cpu": "2"}), ps("worker", 3, rl{"nvidia.com/gpu": "1"})},
			rl{"cpu": "2", "nvidia.com/gpu": "3"}),
		Entry("TFJob: parameter servers and workers, in Kueue's order",
			kubeflowJob("TFJob", "tfReplicaSpecs", map[string]any{
				"Worker": replicaSpec(4, gpuLimit("1")),
				"PS":     replicaSpec(2, cpu("1")),
			}),
			[]workload.PodSet{ps("ps", 2, rl{"cpu": "1"}), ps("worker", 4, rl{"nvidia.com/gpu": "1"})},
			rl{"cpu": "2", "nvidia.com/gpu": "4"}),
		Entry("XGBoostJob: master and workers",
			kubeflowJob("XGBoostJob", "xgbReplicaSpecs", map[string]any{
				"Master": replicaSpec(1, cpu("1")),
				"Worker": replicaSpec(2, cpu("1")),
			}),
			[]workload.PodSet{ps("master", 1, rl{"cpu": "1"}), ps("worker", 2, rl{"cpu": "1"})},
			rl{"cpu": "3"}),
		Entry("PaddleJob: master and workers",
			kubeflowJob("PaddleJob", "paddleReplicaSpecs", map[string]any{
				"Master": replicaSpec(1, gpuLimit("1")),
				"Worker": replicaSpec(2, gpuLimit("1")),
			}),
			[]workload.PodSet{ps("master", 1, rl{"nvidia.com/gpu": "1"}), ps("worker", 2, rl{"nvidia.com/gpu": "1"})},
			rl{"nvidia.com/gpu": "3"}),
		Entry("JAXJob: workers, replicas default to 1",
			kubeflowJob("JAXJob", "jaxReplicaSpecs", map[string]any{"Worker": replicaSpec(0, cpu("4"))}),
			[]workload.PodSet{ps("worker", 1, rl{"cpu": "4"})},
			rl{"cpu": "4"}),

		// Kubeflow Trainer v2
		Entry("TrainJob: numNodes × resourcesPerNode (limits stand in for requests)",
			object("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{
				"runtimeRef": map[string]any{"name": "torch-distributed"},
				"trainer": map[string]any{
					"numNodes": int64(4),
					"resourcesPerNode": map[string]any{
						"requests": rl{"cpu": "4"}.anyMap(),
						"limits":   rl{"nvidia.com/gpu": "8"}.anyMap(),
					},
				},
			}),
			[]workload.PodSet{ps("node", 4, rl{"cpu": "4", "nvidia.com/gpu": "8"})},
			rl{"cpu": "16", "nvidia.com/gpu": "32"}),
		Entry("TrainJob: without trainer overrides, one node of unknown size",
			object("trainer.kubeflow.org/v1alpha1", "TrainJob", map[string]any{
				"runtimeRef": map[string]any{"name": "torch-distributed"},
			}),
			[]workload.PodSet{ps("node", 1, nil)},
			rl{}),

		// AppWrapper
		Entry("AppWrapper: pod sets inferred from a wrapped Job",
			object("workload.codeflare.dev/v1beta2", "AppWrapper", map[string]any{
				"components": []any{map[string]any{"template": map[string]any{
					"apiVersion": "batch/v1",
					"kind":       "Job",
					"metadata":   map[string]any{"name": "wrapped"},
					"spec":       jobSpec(2, 0, gpuLimit("1")),
				}}},
			}),
			[]workload.PodSet{ps("demo-0", 2, rl{"nvidia.com/gpu": "1"})},
			rl{"nvidia.com/gpu": "2"}),

		// Spark operator
		Entry("SparkApplication: driver and executors",
			object("sparkoperator.k8s.io/v1beta2", "SparkApplication", map[string]any{
				"type":                "Python",
				"mode":                "cluster",
				"sparkVersion":        "3.5.0",
				"image":               "spark:3.5.0",
				"mainApplicationFile": "local:///opt/app.py",
				"driver":              map[string]any{"cores": int64(1), "coreRequest": "500m", "memory": "512m"},
				"executor":            map[string]any{"instances": int64(3), "cores": int64(1), "coreRequest": "1", "memory": "2g"},
			}),
			[]workload.PodSet{
				ps("driver", 1, rl{"cpu": "500m", "memory": "512Mi"}),
				ps("executor", 3, rl{"cpu": "1", "memory": "2Gi"}),
			},
			rl{"cpu": "3500m", "memory": "6656Mi"}),
		Entry("SparkApplication: the Spark operator's defaults (1 executor, 1g memory)",
			object("sparkoperator.k8s.io/v1beta2", "SparkApplication", map[string]any{
				"type":                "Scala",
				"sparkVersion":        "3.5.0",
				"mainApplicationFile": "local:///opt/app.jar",
				"driver":              map[string]any{},
				"executor":            map[string]any{},
			}),
			[]workload.PodSet{ps("driver", 1, rl{"memory": "1Gi"}), ps("executor", 1, rl{"memory": "1Gi"})},
			rl{"memory": "2Gi"}),
	)
})
