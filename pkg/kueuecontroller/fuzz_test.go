package kueuecontroller_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
)

// FuzzDetect feeds arbitrary JSON objects to Detect and IdentityOf: neither may panic,
// and a match always carries a bounded, non-empty list of reasons. Its seeds run with
// every `go test`.
func FuzzDetect(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"m","image":"registry.k8s.io/kueue/kueue:v0.19.2","args":["--config","/controller_manager_config.yaml"]}]}}}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app.kubernetes.io/name":"kueue","control-plane":"controller-manager","pod-template-hash":"h"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"k-h","controller":true}]},"spec":{"containers":"x"}}`,
		`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"ownerReferences":[1,{"controller":true}]},"spec":{"template":[]}}`,
		`{"apiVersion":"v1","kind":"Pod","spec":{"initContainers":[{"image":"@:/"},{"image":"::"},{"image":"/"},{"image":""}]}}`,
		`{"apiVersion":7,"kind":null,"metadata":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			return
		}
		obj := &unstructured.Unstructured{Object: m}
		match, ok := kueuecontroller.Detect(obj)
		if ok != (match != nil) {
			t.Fatalf("ok=%v but match=%v", ok, match)
		}
		if ok && (len(match.Reasons) == 0 || len(match.Reasons) > 16) {
			t.Fatalf("reasons out of bounds: %q", match.Reasons)
		}
		_ = kueuecontroller.IdentityOf(obj)
	})
}

// BenchmarkDetect measures the check every Pod and workload in the cluster goes
// through on the controller guard's path.
func BenchmarkDetect(b *testing.B) {
	kueue := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "kueue-controller-manager", "namespace": "kueue-system",
			"labels": map[string]any{"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.19.2", "command": []any{"/manager"},
				"args": []any{"--config=/controller_manager_config.yaml", "--zap-log-level=2"},
			}}},
		}},
	}}
	nginx := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "web", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "nginx", "image": "docker.io/library/nginx:1.27", "args": []any{"-g", "daemon off;"}},
			map[string]any{"name": "sidecar", "image": "ghcr.io/example/proxy:v2"},
		}},
	}}
	b.Run("kueue", func(b *testing.B) {
		for b.Loop() {
			kueuecontroller.Detect(kueue)
		}
	})
	b.Run("other", func(b *testing.B) {
		for b.Loop() {
			kueuecontroller.Detect(nginx)
		}
	})
}
