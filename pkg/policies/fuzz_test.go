package policies_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// fuzzRuntime is the ClusterTrainingRuntime the TrainJob fixture names, so
// that TrainJob inputs reach the runtime framework.
const fuzzRuntime = `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-distributed, uid: rt, resourceVersion: "1"}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
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
                - {name: node, image: torch, resources: {requests: {cpu: "2"}, limits: {nvidia.com/gpu: "1"}}}
`

// FuzzBuildInput gives the policy input builder any object (and old object),
// as any catalog kind and operation, against a cluster with the queue the
// seeds name. Nothing may panic, and an input that is built must be valid JSON
// that conforms to the published input schema (schemas/input.json): a policy
// may rely on every field the schema promises, whatever the tenant wrote.
// Decoding is FuzzHandle's part; bytes that are not a JSON object are skipped.
func FuzzBuildInput(f *testing.F) {
	for i, o := range fixtures.EveryKind("ml") {
		for _, obj := range []fixtures.Object{o, o.Queue("q")} {
			raw, err := json.Marshal(obj.Obj().Object)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw, raw, uint8(i), uint8(i%2))
		}
	}
	f.Add(
		[]byte(`{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":"q"}},"spec":{"parallelism":-5,"template":{"spec":{"containers":[{"resources":{"requests":{"cpu":"1e12"}}}]}}}}`),
		[]byte(`{}`),
		uint8(0),
		uint8(1),
	)

	rt := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(fuzzRuntime), &rt.Object); err != nil {
		f.Fatal(err)
	}
	view, err := cluster.NewSnapshot(append(fixtures.GPUCluster(nil), client.Object(rt))...)
	if err != nil {
		f.Fatal(err)
	}
	schema := compileInputSchema(f)
	catalog := integrations.All()
	// Policies judge CREATE and UPDATE only (the webhooks register no more).
	ops := []admissionv1.Operation{admissionv1.Create, admissionv1.Update}

	f.Fuzz(func(t *testing.T, obj, old []byte, kind, op uint8) {
		in := catalog[int(kind)%len(catalog)]
		req := &admission.Request{
			Raw: obj, Size: len(obj), UID: "fuzz", Operation: ops[int(op)%len(ops)], Kind: in.GVK, Namespace: "ml", Name: "w",
			UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
		}
		if req.Object = fuzzObject(obj, in); req.Object == nil {
			t.Skip()
		}
		if req.Operation == admissionv1.Update {
			req.OldObject = fuzzObject(old, in)
		}
		v, err := policies.BuildInput(t.Context(), req, admission.Target{}, view)
		if err != nil {
			return // a refusal is fine: the step turns it into a clear error
		}
		raw, err := ast.JSON(v)
		if err != nil {
			t.Fatalf("the input is not JSON: %v", err)
		}
		b, err := json.Marshal(raw)
		if err != nil {
			t.Fatalf("the input does not marshal: %v", err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("the input does not read back: %v", err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Fatalf("the input breaks its schema: %v\n%s", err, b)
		}
	})
}

// fuzzObject decodes a JSON object as the catalog kind, or returns nil.
func fuzzObject(raw []byte, in *integrations.Integration) *unstructured.Unstructured {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(in.GVK)
	return u
}

func compileInputSchema(tb testing.TB) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policies.InputSchema()))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource("input.json", doc); err != nil {
		tb.Fatal(err)
	}
	s, err := c.Compile("input.json")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
