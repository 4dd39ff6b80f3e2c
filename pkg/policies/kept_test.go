package policies

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
)

// TestKeptRequestBuildsTheSameInput: the canary tries a new set on the input a
// kept request builds again from its JSON, which must be the input the
// request had, whatever the object holds (managedFields, an old object).
func TestKeptRequestBuildsTheSameInput(t *testing.T) {
	view, err := cluster.NewSnapshot(fixtures.GPUCluster(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	job := fixtures.Job("ml", "j").Queue("lq").Parallelism(3).Requests("nvidia.com/gpu", "2").Obj()
	stored := fixtures.TrainingJobSet("ml", "train").Queue("lq").AsStored().Obj()
	grown := fixtures.Object{Unstructured: stored.DeepCopy()}.Label("grown", "yes").Obj()
	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation
		obj, old *unstructured.Unstructured
	}{
		{"Job CREATE", admissionv1.Create, job, nil},
		{"stored JobSet CREATE", admissionv1.Create, stored, nil},
		{"stored JobSet UPDATE", admissionv1.Update, grown, stored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := integrations.Lookup(tc.obj.GroupVersionKind().GroupKind())
			target := admission.Target{Integration: in}
			req := &admission.Request{UID: "u", Operation: tc.op, Kind: tc.obj.GroupVersionKind(), Namespace: "ml",
				Name: tc.obj.GetName(), Object: tc.obj, OldObject: tc.old, Size: 1,
				UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"ml-team"}}}
			want, err := BuildInput(t.Context(), req, target, view)
			if err != nil {
				t.Fatal(err)
			}
			rebuild := (&Step{frags: &fragments{}}).rebuilder(req, target, view)
			if rebuild == nil {
				t.Fatal("the request could not be kept")
			}
			got, err := rebuild()
			if err != nil {
				t.Fatal(err)
			}
			if got.Compare(want) != 0 {
				t.Errorf("the kept request builds another input:\ngot  %v\nwant %v", got, want)
			}
		})
	}
}
