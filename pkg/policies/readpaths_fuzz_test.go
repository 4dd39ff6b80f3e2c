package policies_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/gomega"
)

// FuzzProjectedDecisions gives the policy step any queued Job to create and
// compares its decision, made on the input built from only what the policies
// read (and reused for an input seen before), with every policy evaluated on
// the whole input. The policies are the shipped ones and trickyReads, which
// reach fields every way the input analysis must follow or give up on: a
// field the analysis misses changes an answer here.
func FuzzProjectedDecisions(f *testing.F) {
	RegisterTestingT(f)
	files := maps.Clone(trickyReads)
	entries, err := os.ReadDir(shippedDir)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		if name := e.Name(); !strings.HasSuffix(name, "_test.rego") {
			content, err := os.ReadFile(filepath.Join(shippedDir, name))
			Expect(err).NotTo(HaveOccurred())
			files[name] = string(content)
		}
	}
	dir := f.TempDir()
	writeFiles(dir, files)
	fast := policies.NewStep(loadedEngine(dir))
	full := loadedEngine(dir, noDecisionCache)
	view := gpuCluster("2")
	for _, change := range trickyChanges() {
		obj := gpuJob("fuzz", 2, "1")
		change(fixtures.Object{Unstructured: obj})
		raw, err := json.Marshal(obj.Object)
		Expect(err).NotTo(HaveOccurred())
		f.Add(raw)
	}

	job, ok := integrations.Lookup(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind())
	Expect(ok).To(BeTrue())
	f.Fuzz(func(t *testing.T, raw []byte) {
		RegisterTestingT(t) // the shared helpers assert with Gomega, on this input's t
		req := fuzzJobCreate(raw, job)
		if req == nil {
			t.Skip()
		}
		in, err := policies.BuildInput(t.Context(), req, admission.Target{}, view)
		if err != nil {
			t.Skip() // refused before any policy: the step refuses it too
		}
		res := full.Evaluate(t.Context(), in)
		if len(res.Failures) > 0 {
			t.Skip() // a policy that fails on this input fails on the step's too
		}
		want := []string{}
		for _, f := range res.Findings {
			want = append(want, fmt.Sprintf("%s: %s", f.Policy.ID, f.Message))
		}
		slices.Sort(want)
		p := admission.NewPipeline(nil, nil, admission.Steps{Validating: []admission.ValidationStep{fast}})
		d, err := p.Validate(t.Context(), req, view)
		if err != nil {
			t.Fatalf("the step failed where a full evaluation did not: %v", err)
		}
		if diff := cmp.Diff(want, policyFindings(d)); diff != "" {
			t.Fatalf("the step's decision differs from a full evaluation (-full +step):\n%s\nobject: %s", diff, raw)
		}
	})
}

// fuzzJobCreate is a CREATE of raw as a Job in ml, queued in lq, or nil when
// raw is not a JSON object with an object's metadata.
func fuzzJobCreate(raw []byte, job *integrations.Integration) *admission.Request {
	obj := fuzzObject(raw, job)
	if obj == nil {
		return nil
	}
	meta, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return nil
	}
	if _, ok := meta["labels"].(map[string]any); !ok {
		meta["labels"] = map[string]any{} // where the queue label goes
	}
	obj.SetNamespace("ml")
	return createRequest(fixtures.Object{Unstructured: obj}.Queue("lq").Obj())
}
