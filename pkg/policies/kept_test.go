package policies

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"
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
		// deferred: the objects' managedFields are left undecoded, as the
		// webhook leaves them.
		deferred bool
	}{
		{"Job CREATE", admissionv1.Create, job, nil, false},
		{"stored JobSet CREATE", admissionv1.Create, stored, nil, false},
		{"stored JobSet UPDATE", admissionv1.Update, grown, stored, false},
		{"stored JobSet UPDATE, managedFields undecoded", admissionv1.Update, grown, stored, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := integrations.Lookup(tc.obj.GroupVersionKind().GroupKind())
			target := admission.Target{Integration: in}
			req := &admission.Request{UID: "u", Operation: tc.op, Kind: tc.obj.GroupVersionKind(), Namespace: "ml",
				Name: tc.obj.GetName(), Object: tc.obj, OldObject: tc.old, Size: 1,
				UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"ml-team"}}}
			if tc.deferred {
				req.Object, req.OldObject = deferManagedFields(t, req, tc.obj), deferManagedFields(t, req, tc.old)
			}
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

// deferManagedFields is a copy of obj without its managedFields, which it adds
// to req.Undecoded as the webhook does.
func deferManagedFields(t *testing.T, req *admission.Request, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u := obj.DeepCopy()
	mf, found, err := unstructured.NestedFieldNoCopy(u.Object, admission.ManagedFieldsPath...)
	if err != nil || !found {
		t.Fatalf("the object has no managedFields (%v)", err)
	}
	raw, err := json.Marshal(mf)
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(u.Object, admission.ManagedFieldsPath...)
	req.Undecoded = append(req.Undecoded, admission.UndecodedManagedFields{Object: u, Deferred: jsonmap.Deferred{JSON: raw}})
	return u
}
