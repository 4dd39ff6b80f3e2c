package review_test

import (
	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// explainState has one ClusterQueue per situation, each behind a LocalQueue of
// the same name in namespace team.
const explainState = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: small}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: two-flavors}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory, pods]
    flavors:
    - name: small
      resources: [{name: cpu, nominalQuota: 4}, {name: memory, nominalQuota: 64Gi}, {name: pods, nominalQuota: 10}]
    - name: large
      resources: [{name: cpu, nominalQuota: 4}, {name: memory, nominalQuota: 64Gi}, {name: pods, nominalQuota: 10}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: borrowing}
spec:
  cohortName: org
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: small
      resources: [{name: cpu, nominalQuota: 1}, {name: memory, nominalQuota: 1Gi, borrowingLimit: 63Gi}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: lender}
spec:
  cohortName: org
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: small
      resources: [{name: cpu, nominalQuota: 16}, {name: memory, nominalQuota: 100Gi}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cpu-only}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: small
      resources: [{name: cpu, nominalQuota: 100}, {name: memory, nominalQuota: 100Gi}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: two-flavors, namespace: team}
spec: {clusterQueue: two-flavors}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: borrowing, namespace: team}
spec: {clusterQueue: borrowing}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: cpu-only, namespace: team}
spec: {clusterQueue: cpu-only}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: dangling, namespace: team}
spec: {clusterQueue: nowhere}
`

// job is a Job of pods × (cpu, 1Gi memory, gpus) in queue q.
func job(q string, pods int, cpu string, gpus int) string {
	s := `apiVersion: batch/v1
kind: Job
metadata:
  name: j
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: ` + q + `, kueue.x-k8s.io/priority-class: high}
spec:
  parallelism: ` + itoa(pods) + `
  completions: ` + itoa(pods) + `
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        resources:
          requests: {cpu: "` + cpu + `", memory: 1Gi}
`
	if gpus > 0 {
		s += "          limits: {nvidia.com/gpu: " + itoa(gpus) + "}\n"
	}
	return s
}

var _ = Describe("explaining where a workload lands", func() {
	var state *review.State
	BeforeEach(func() { state = stateFrom(explainState) })

	place := func(yaml string) *review.Placement {
		GinkgoHelper()
		o := run(review.Options{State: state, Explain: true}, yaml).Objects[0]
		Expect(o.Placement).NotTo(BeNil())
		return o.Placement
	}

	It("follows namespace → LocalQueue → ClusterQueue and finds the flavors that hold the workload", func() {
		p := place(job("two-flavors", 3, "1", 0))
		Expect(p.Namespace).To(Equal(review.NamedState{Name: "team", State: review.KnownCluster}))
		Expect(p.LocalQueue.Name).To(Equal("two-flavors"))
		Expect(p.LocalQueue.Source).To(Equal(review.KnownManifest))
		Expect(p.ClusterQueue.NamedState).To(Equal(review.NamedState{Name: "two-flavors", State: review.KnownCluster}))
		Expect(*p.PriorityClass).To(Equal(review.PriorityPlace{NamedState: review.NamedState{Name: "high", State: review.KnownCluster}, Value: new(int32(1000))}))
		Expect(p.TotalRequests).To(Equal(map[string]string{"cpu": "3", "memory": "3Gi", "pods": "3"}))
		Expect(p.Verdict).To(Equal(review.VerdictFits))
		Expect(p.Flavors).To(HaveLen(2))
		Expect(p.Flavors[0].State).To(Equal(review.KnownCluster))
		Expect(p.Flavors[1].State).To(Equal(review.KnownMissing), "flavor large is not in the state")
		Expect(p.Flavors[0].Resources[0]).To(Equal(review.ResourceFit{Resource: "cpu", Requested: "3", Nominal: "4", Capacity: "4", Fits: true}))
	})

	It("says a workload may fit when only the flavors together could hold it", func() {
		p := place(job("two-flavors", 3, "2", 0))
		Expect(p.Verdict).To(Equal(review.VerdictMayFit))
		Expect(p.Flavors[0].Fits).To(BeFalse())
	})

	It("says a workload never fits when the quota can never hold it", func() {
		p := place(job("two-flavors", 5, "2", 0))
		Expect(p.Verdict).To(Equal(review.VerdictNeverFits))
		Expect(p.Reason).To(ContainSubstring("[cpu]"))
	})

	It("counts what the cohort can lend, within the borrowing limit, as Kueue does", func() {
		p := place(job("borrowing", 4, "2", 0))
		Expect(p.Verdict).To(Equal(review.VerdictFits))
		Expect(p.ClusterQueue.Cohort).To(Equal("org"))
		Expect(p.Flavors[0].Resources).To(Equal([]review.ResourceFit{
			{Resource: "cpu", Requested: "8", Nominal: "1", Capacity: "17", Fits: true},
			{Resource: "memory", Requested: "4Gi", Nominal: "1Gi", BorrowingLimit: "63Gi", Capacity: "64Gi", Fits: true},
		}), "cpu: its 1 and all of the lender's 16; memory: at most 63Gi borrowed")
		Expect(place(job("borrowing", 9, "2", 0)).Verdict).To(Equal(review.VerdictNeverFits), "18 cpu: more than the cohort has")
	})

	It("says a resource without quota can never be admitted", func() {
		p := place(job("cpu-only", 1, "1", 2))
		Expect(p.Verdict).To(Equal(review.VerdictNeverFits))
		Expect(p.Uncovered).To(Equal([]string{"nvidia.com/gpu"}))
	})

	It("says when the ClusterQueue or LocalQueue does not exist, and when there is no queue at all", func() {
		Expect(place(job("dangling", 1, "1", 0)).Verdict).To(Equal(review.VerdictQueueMissing))
		p := place(job("absent", 1, "1", 0))
		Expect(p.Verdict).To(Equal(review.VerdictQueueMissing))
		Expect(p.LocalQueue.State).To(Equal(review.KnownMissing))
		Expect(place(unlabeledJob).Verdict).To(Equal(review.VerdictNoQueue))
	})
})

//go:fix inline

var _ = Describe("explaining a workload Kueue does not manage", func() {
	It("says so for a Pod outside Kueue's managedJobsNamespaceSelector", func() {
		state := stateFrom(`apiVersion: v1
kind: Namespace
metadata: {name: plain}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    integrations: {frameworks: [pod]}
    managedJobsNamespaceSelector: {matchLabels: {kueue: managed}}
`)
		o := run(review.Options{State: state, Explain: true}, `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: plain, labels: {kueue.x-k8s.io/queue-name: q}}
spec: {containers: [{name: c, image: busybox}]}
`).Objects[0]
		Expect(o.Placement.Verdict).To(Equal(review.VerdictUnmanaged))
		Expect(o.Placement.Reason).To(ContainSubstring(`Kueue does not manage Pods in namespace "plain"`))
	})
})

var _ = Describe("a TrainJob is counted from the runtime it names", func() {
	const runtime = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: torch, resources: {requests: {cpu: "1", memory: 1Gi}}}
`
	const trainJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: train
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: two-flavors}
spec:
  runtimeRef: {name: torch}
  trainer: {numNodes: 3}
`
	placed := func(state *review.State, yaml string) *review.Placement {
		GinkgoHelper()
		o := object(run(review.Options{State: state, Explain: true}, yaml), "TrainJob", "train")
		Expect(o.Placement).NotTo(BeNil())
		return o.Placement
	}

	It("takes the runtime from the reviewed manifests", func() {
		p := placed(stateFrom(explainState), runtime+"---\n"+trainJob)
		Expect(p.TotalRequests).To(Equal(map[string]string{"cpu": "3", "memory": "3Gi", "pods": "3"}))
	})

	It("takes the runtime from the cluster state", func() {
		p := placed(stateFrom(explainState+"---\n"+runtime), trainJob)
		Expect(p.TotalRequests).To(Equal(map[string]string{"cpu": "3", "memory": "3Gi", "pods": "3"}))
	})

	It("counts the TrainJob's own fields when the runtime is nowhere", func() {
		p := placed(stateFrom(explainState), trainJob)
		Expect(p.TotalRequests).To(Equal(map[string]string{"pods": "3"}))
	})
})

var _ = Describe("devices a ResourceClaimTemplate claims are counted as Kueue charges them", func() {
	const kueueConfig = `apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    resources:
      deviceClassMappings: [{name: nvidia.com/gpu, deviceClassNames: [gpu.nvidia.com]}]
`
	const template = `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus, namespace: team}
spec: {spec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 2}}]}}}
`
	const claimingJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: claims
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: two-flavors}
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      restartPolicy: Never
      resourceClaims: [{name: gpus, resourceClaimTemplateName: two-gpus}]
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
`
	placed := func(state *review.State, yaml string) *review.Placement {
		GinkgoHelper()
		o := object(run(review.Options{State: state, Explain: true}, yaml), "Job", "claims")
		Expect(o.Placement).NotTo(BeNil())
		return o.Placement
	}

	It("takes the template from the reviewed manifests", func() {
		p := placed(stateFrom(explainState+"---\n"+kueueConfig), template+"---\n"+claimingJob)
		Expect(p.TotalRequests).To(HaveKeyWithValue("nvidia.com/gpu", "6"))
	})

	It("takes the template from the cluster state", func() {
		p := placed(stateFrom(explainState+"---\n"+kueueConfig+"---\n"+template), claimingJob)
		Expect(p.TotalRequests).To(HaveKeyWithValue("nvidia.com/gpu", "6"))
	})
})
