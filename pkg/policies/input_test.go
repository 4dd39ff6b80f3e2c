package policies_test

import (
	"context"
	"encoding/json"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// inputJSON builds the input and converts it back to plain Go values, the way a
// policy sees it.
func inputJSON(req *admission.Request, view cluster.View) map[string]any {
	v, err := policies.BuildInput(context.Background(), req, admission.Target{}, view)
	Expect(err).NotTo(HaveOccurred())
	out, err := ast.JSON(v)
	Expect(err).NotTo(HaveOccurred())
	// Normalise numbers to float64 for comparisons.
	raw, err := json.Marshal(out)
	Expect(err).NotTo(HaveOccurred())
	var m map[string]any
	Expect(json.Unmarshal(raw, &m)).To(Succeed())
	return m
}

func path(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

var _ = Describe("BuildInput", func() {
	var (
		job  *unstructured.Unstructured
		view *cluster.Snapshot
	)
	BeforeEach(func() {
		job = fixtures.Job("ml", "train").Queue("lq").Label("kueue.x-k8s.io/priority-class", "high").
			Requests("cpu", "500m").Requests("memory", "1536Mi").Requests(gpu, "2").Obj()
		Expect(unstructured.SetNestedField(job.Object, int64(5), "spec", "parallelism")).To(Succeed())
		Expect(unstructured.SetNestedField(job.Object, int64(5), "spec", "completions")).To(Succeed())
		cq := clusterQueue("cq", "research",
			quota{flavor: "a100", resource: gpu, nominal: "4", borrowing: "4", used: "2", reserved: "3"},
			quota{flavor: "a100", resource: "cpu", nominal: "64", lending: "8"},
			quota{flavor: "a100", resource: "memory", nominal: "256Gi", used: "1Gi"},
			quota{flavor: "spot", resource: gpu, nominal: "0", borrowing: "8"},
		)
		cq.Status.PendingWorkloads, cq.Status.ReservingWorkloads, cq.Status.AdmittedWorkloads = 3, 2, 1
		meta.SetStatusCondition(&cq.Status.Conditions, metav1.Condition{Type: kueue.ClusterQueueActive, Status: metav1.ConditionTrue, Reason: "Ready"})
		hold := kueue.Hold
		lq := localQueue("ml", "lq", "cq")
		lq.Spec.StopPolicy = &hold
		lq.Status.PendingWorkloads = 7
		view = snapshot(namespace("ml", map[string]string{"team": "ml"}, map[string]string{"kueue-guard.io/allowed-queues": "lq"}), lq, cq)
	})

	It("describes the request", func() {
		req := createRequest(job)
		req.DryRun = true
		req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}}
		in := inputJSON(req, view)
		Expect(in["request"]).To(Equal(map[string]any{
			"uid": "0000-1111", "operation": "CREATE", "namespace": "ml", "name": "train", "dryRun": true, "trustedController": false,
			"kind":     map[string]any{"group": "batch", "version": "v1", "kind": "Job"},
			"userInfo": map[string]any{"username": "alice", "uid": "", "groups": []any{"ml-team", "system:authenticated"}, "extra": map[string]any{"scopes": []any{"a", "b"}}},
		}))
		Expect(path(in, "object", "metadata", "name")).To(Equal("train"))
		Expect(path(in, "object", "spec", "parallelism")).To(Equal(5.0))
		Expect(in).To(HaveKeyWithValue("oldObject", BeNil()))
		Expect(in["namespace"]).To(Equal(map[string]any{"name": "ml", "labels": map[string]any{"team": "ml"},
			"annotations": map[string]any{"kueue-guard.io/allowed-queues": "lq"}}))
	})

	It("summarises the workload with quantities in base units", func() {
		in := inputJSON(createRequest(job), view)
		Expect(in["workload"]).To(Equal(map[string]any{
			"kind":          map[string]any{"group": "batch", "version": "v1", "kind": "Job"},
			"framework":     "batch/job",
			"queueName":     "lq",
			"priorityClass": "high",
			"priority":      map[string]any{"class": "high", "source": "kueue.x-k8s.io/workloadpriorityclass"},
			"podSets": []any{map[string]any{"name": "main", "count": 5.0, "minCount": nil,
				"requests": map[string]any{"cpu": 0.5, "memory": 1536.0 * 1024 * 1024, gpu: 2.0}}},
			"totalRequests":   map[string]any{"cpu": 2.5, "memory": 5 * 1536.0 * 1024 * 1024, gpu: 10.0},
			"admissionUnit":   "workload",
			"unitRequests":    map[string]any{"cpu": 2.5, "memory": 5 * 1536.0 * 1024 * 1024, gpu: 10.0},
			"minUnitRequests": map[string]any{"cpu": 2.5, "memory": 5 * 1536.0 * 1024 * 1024, gpu: 10.0},
			"topLevel":        true,
			"grows":           false,
			"podSpecPaths":    []any{[]any{"spec", "template", "spec"}},
			"jobSpecPaths":    []any{[]any{"spec"}},
			"podSpecs":        []any{path(in, "object", "spec", "template", "spec")},
			"jobSpecs":        []any{path(in, "object", "spec")},
			"claimsUncounted": "",
		}))
		Expect(in).To(HaveKeyWithValue("oldWorkload", BeNil()))
	})

	It("charges what Kueue charges: the namespace's LimitRange defaults and Kueue's resources configuration", func() {
		bare := fixtures.Job("ml", "bare").Queue("lq").Set([]any{map[string]any{"name": "main", "image": "busybox"}},
			"spec", "template", "spec", "containers").Obj()
		kueueCfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: "kueue-manager-config"},
			Data: map[string]string{"controller_manager_config.yaml": "resources:\n  excludeResourcePrefixes: [memory]\n"}}
		v := snapshot(namespace("ml", nil, nil), localQueue("ml", "lq", "cq"), kueueCfg,
			&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "defaults"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
					DefaultRequest: corev1.ResourceList{"cpu": resource.MustParse("250m"), "memory": resource.MustParse("1Gi")}}}}})
		in := inputJSON(createRequest(bare), v)
		Expect(path(in, "workload", "totalRequests")).To(Equal(map[string]any{"cpu": 0.25}),
			"the LimitRange's default request, and memory excluded as Kueue's Configuration says")
	})

	It("says whether the requester is a trusted controller, from the pipeline's decision", func() {
		v, err := policies.BuildInput(context.Background(), createRequest(job), admission.Target{TrustedController: true}, view)
		Expect(err).NotTo(HaveOccurred())
		in, err := ast.JSON(v)
		Expect(err).NotTo(HaveOccurred())
		Expect(path(in.(map[string]any), "request", "trustedController")).To(BeTrue())
	})

	DescribeTable("summarises the old object on UPDATE and says whether the update grows the workload",
		func(mutate func(newJob *unstructured.Unstructured), grows bool) {
			req := createRequest(job.DeepCopy())
			req.Operation = admissionv1.Update
			req.OldObject = job.DeepCopy()
			mutate(req.Object)
			in := inputJSON(req, view)
			Expect(path(in, "oldWorkload", "totalRequests", gpu)).To(Equal(10.0))
			Expect(path(in, "workload", "grows")).To(Equal(grows))
		},
		Entry("unchanged", func(*unstructured.Unstructured) {}, false),
		Entry("more pods", func(j *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(j.Object, int64(6), "spec", "parallelism")).To(Succeed())
			Expect(unstructured.SetNestedField(j.Object, int64(6), "spec", "completions")).To(Succeed())
		}, true),
		Entry("fewer pods (partial admission)", func(j *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(j.Object, int64(2), "spec", "parallelism")).To(Succeed())
		}, false),
		Entry("requests dropped (BestEffort pods are charged nothing)", func(j *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(j.Object, "spec", "template", "spec", "containers")
			for _, c := range cs {
				delete(c.(map[string]any), "resources")
			}
			Expect(unstructured.SetNestedSlice(j.Object, cs, "spec", "template", "spec", "containers")).To(Succeed())
		}, true),
		Entry("suspend flipped (Kueue unsuspending)", func(j *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(j.Object, false, "spec", "suspend")).To(Succeed())
		}, false),
	)

	It("resolves the LocalQueue and its ClusterQueue's quotas and usage", func() {
		in := inputJSON(createRequest(job), view)
		Expect(in["localQueue"]).To(Equal(map[string]any{
			"name": "lq", "clusterQueue": "cq", "stopPolicy": "Hold",
			"status": map[string]any{"active": nil, "pendingWorkloads": 7.0, "reservingWorkloads": 0.0, "admittedWorkloads": 0.0,
				"flavorsUsage": []any{}, "flavorsReservation": []any{}},
		}))
		Expect(in["clusterQueue"]).To(Equal(map[string]any{
			"name": "cq", "cohort": "research", "stopPolicy": "None", "active": true,
			"pendingWorkloads": 3.0, "reservingWorkloads": 2.0, "admittedWorkloads": 1.0,
			// Kueue's arithmetic: alone in its cohort, the queue can borrow
			// nothing beyond its own quota, whatever its borrowing limits.
			"capacity": []any{
				map[string]any{"flavor": "a100", "resource": "cpu", "max": 64.0},
				map[string]any{"flavor": "a100", "resource": "memory", "max": 256.0 * 1024 * 1024 * 1024},
				map[string]any{"flavor": "a100", "resource": gpu, "max": 4.0},
				map[string]any{"flavor": "spot", "resource": gpu, "max": 0.0},
			},
			"quotas": []any{
				map[string]any{"flavor": "a100", "resource": gpu, "nominal": 4.0, "borrowingLimit": 4.0, "lendingLimit": nil, "used": 2.0, "reserved": 3.0},
				map[string]any{"flavor": "a100", "resource": "cpu", "nominal": 64.0, "borrowingLimit": nil, "lendingLimit": 8.0, "used": 0.0, "reserved": 0.0},
				map[string]any{
					"flavor":         "a100",
					"resource":       "memory",
					"nominal":        256.0 * 1024 * 1024 * 1024,
					"borrowingLimit": nil,
					"lendingLimit":   nil,
					"used":           1024.0 * 1024 * 1024,
					"reserved":       0.0,
				},
				map[string]any{"flavor": "spot", "resource": gpu, "nominal": 0.0, "borrowingLimit": 8.0, "lendingLimit": nil, "used": 0.0, "reserved": 0.0},
			},
			// Summed over flavors: free is capacity minus the larger of used
			// and reserved (4 - 3 GPUs on a100, nothing on spot).
			"resources": map[string]any{
				gpu:      map[string]any{"flavors": []any{"a100", "spot"}, "max": 4.0, "largestFlavor": 4.0, "free": 1.0},
				"cpu":    map[string]any{"flavors": []any{"a100"}, "max": 64.0, "largestFlavor": 64.0, "free": 64.0},
				"memory": map[string]any{"flavors": []any{"a100"}, "max": 256.0 * 1024 * 1024 * 1024, "largestFlavor": 256.0 * 1024 * 1024 * 1024, "free": 255.0 * 1024 * 1024 * 1024},
			},
		}))
	})

	It("gives null queues when the LocalQueue or its ClusterQueue is missing", func() {
		orphan := snapshot(namespace("ml", nil, nil), localQueue("ml", "lq", "gone"))
		in := inputJSON(createRequest(job), orphan)
		Expect(path(in, "localQueue", "clusterQueue")).To(Equal("gone"))
		Expect(in).To(HaveKeyWithValue("clusterQueue", BeNil()))

		in = inputJSON(createRequest(job), snapshot())
		Expect(in).To(HaveKeyWithValue("localQueue", BeNil()))
		Expect(in).To(HaveKeyWithValue("clusterQueue", BeNil()))
		Expect(in["namespace"]).To(Equal(map[string]any{"name": "ml", "labels": map[string]any{}, "annotations": map[string]any{}}),
			"an unknown namespace reads as empty")
	})

	It("carries the old object of an UPDATE", func() {
		req := createRequest(job)
		req.Operation = admissionv1.Update
		req.OldObject = fixtures.Job("ml", "train").Queue("other").Obj()
		in := inputJSON(req, view)
		Expect(path(in, "oldObject", "metadata", "labels", "kueue.x-k8s.io/queue-name")).To(Equal("other"))
		Expect(path(in, "request", "operation")).To(Equal("UPDATE"))
	})

	It("keeps exact whole quantities and fractional cores", func() {
		job = fixtures.Job("ml", "big").Queue("lq").Requests("cpu", "1001m").Requests("memory", "1Ti").Obj()
		v, err := policies.BuildInput(context.Background(), createRequest(job), admission.Target{}, view)
		Expect(err).NotTo(HaveOccurred())
		total, err := v.Find(ast.MustParseRef("x.workload.totalRequests")[1:])
		Expect(err).NotTo(HaveOccurred())
		Expect(total.String()).To(Equal(`{"cpu": 1.001, "memory": 1099511627776}`))
	})

	It("fails on an object it cannot summarise", func() {
		bad := fixtures.Job("ml", "bad").Queue("lq").Obj()
		Expect(unstructured.SetNestedField(bad.Object, "three", "spec", "parallelism")).To(Succeed())
		_, err := policies.BuildInput(context.Background(), createRequest(bad), admission.Target{}, view)
		Expect(err).To(HaveOccurred())
	})
})
