package admission_test

import (
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// benchView is a namespace with a default queue, its LocalQueue and a GPU
// ClusterQueue: every step has something to look at.
func benchView(b *testing.B) cluster.View {
	b.Helper()
	v, err := cluster.NewSnapshot(fixtures.GPUCluster(map[string]string{guard.DefaultQueueAnnotation: "q"})...)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func benchPipeline(b *testing.B, withPolicies bool) *guard.Pipeline {
	b.Helper()
	cfg := config.Default()
	var steps []guard.ValidationStep
	if withPolicies {
		eng, err := policies.NewEngine(policies.Options{Directory: filepath.Join("..", "..", "policies"), OnError: config.OnErrorDeny})
		if err != nil {
			b.Fatal(err)
		}
		if err := eng.Load(); err != nil {
			b.Fatal(err)
		}
		steps = append(steps, policies.NewStep(eng))
	}
	p, err := guard.Build(cfg, "kueue-guard-system", steps...)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkWorkload measures one request's whole pipeline as the API server runs
// it (mutate, then validate the mutated object): what the offline reviewer does
// per object and what a CREATE costs the webhook, HTTP aside.
func BenchmarkWorkload(b *testing.B) {
	objects := map[string]*unstructured.Unstructured{
		"Job":    fixtures.Job("ml", "j").Parallelism(4).Requests("nvidia.com/gpu", "2").Obj(),
		"JobSet": fixtures.JobSet("ml", "js").Requests("nvidia.com/gpu", "1").Obj(),
		// A ReplicaSet's pod is judged as a pod of its own: what every pod of a
		// Deployment in a judged namespace costs.
		"ReplicaSetPod": fixtures.Pod("ml", "p").ControlledBy("apps/v1", "ReplicaSet", "rs").Obj(),
	}
	for _, withPolicies := range []bool{false, true} {
		p := benchPipeline(b, withPolicies)
		v := benchView(b)
		for kind, obj := range objects {
			name := kind + "/guards"
			if withPolicies {
				name = kind + "/guards+shipped-policies"
			}
			b.Run(name, func(b *testing.B) {
				req := &guard.Request{Operation: admissionv1.Create, Kind: obj.GroupVersionKind(), Namespace: "ml",
					Name: obj.GetName(), Object: obj}
				if len(obj.GetOwnerReferences()) > 0 {
					req.UserInfo.Username = "system:serviceaccount:kube-system:replicaset-controller"
				}
				b.ReportAllocs()
				for b.Loop() {
					d, err := p.Workload(b.Context(), req, v)
					if err != nil || !d.Allowed() {
						b.Fatalf("unexpected decision: %v %+v", err, d)
					}
				}
			})
		}
	}
}
