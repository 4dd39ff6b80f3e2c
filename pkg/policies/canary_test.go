package policies_test

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// conflicting compiles, and fails at evaluation on any object with a name:
// the function has two outputs for the same input.
const conflicting = `f(x) := 1 if x != ""

f(x) := 2 if x != ""

deny contains "conflict" if f(input.object.metadata.name) == 1`

// conflictingInML is conflicting in namespace ml only: not on the canary's
// sample workloads, which are in namespace default.
const conflictingInML = `f(x) := 1 if x != ""

f(x) := 2 if x != ""

deny contains "conflict" if {
	input.request.namespace == "ml"
	f(input.object.metadata.name) == 1
}`

var _ = Describe("trying a new set on recent inputs before it serves", func() {
	var dir string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "good" if true`)})
	})

	It("refuses a set that fails at evaluation where the serving set does not, naming file and line", func() {
		e := loadedEngine(dir)
		Expect(messagesFor(e)()).To(ConsistOf("good"), "the serving set judges a Job")

		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", conflicting)})
		err := e.Load()
		var le *policies.LoadError
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Problems).To(HaveLen(1))
		Expect(le.Problems[0].File).To(Equal(filepath.Join(dir, "p.rego")))
		Expect(le.Problems[0].Line).To(BeNumerically(">", 0))
		Expect(le.Problems[0].Message).To(ContainSubstring(`t.p fails at evaluation on a recent Job CREATE request in namespace "ml"`))
		Expect(le.Problems[0].Message).To(ContainSubstring("eval_conflict_error"))

		v, _ := e.Version()
		Expect(v).To(Equal(uint64(1)), "the last good set keeps serving")
		Expect(messagesFor(e)()).To(ConsistOf("good"))
		Expect(metricValue(e.Metrics().LoadErrors)).To(Equal(1.0))
	})

	It("keeps no large object among the recent inputs, so none is tried on it", func() {
		e := loadedEngine(dir)
		big := fixtures.Job("ml", "j").Queue("lq").Obj()
		big.SetAnnotations(map[string]string{"padding": strings.Repeat("x", 64<<10)})
		Expect(validate(e, createRequest(big), snapshot()).Violations).To(HaveLen(1), "the serving set judges it")
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", conflictingInML)})
		Expect(e.Load()).To(Succeed(), "a 64 KiB object is not kept: it would pin memory")
	})

	It("holds a judged request's objects as JSON only, and tries a new set on them decoded again", func() {
		e := loadedEngine(dir)
		held := func() weak.Pointer[unstructured.Unstructured] {
			obj := fixtures.Job("ml", "j").Queue("lq").Obj()
			Expect(validate(e, createRequest(obj), snapshot()).Violations).To(HaveLen(1))
			return weak.Make(obj)
		}()
		Expect(policies.RecentInputs(e)).To(Equal(1))
		// Decoded, a recent object is thousands of small allocations the
		// collector marks on every cycle for as long as it is held.
		Eventually(func() *unstructured.Unstructured { runtime.GC(); return held.Value() }).Should(BeNil(),
			"nothing the engine keeps points to the decoded object")

		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", conflicting)})
		err := e.Load()
		var le *policies.LoadError
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Problems[0].Message).To(ContainSubstring(`t.p fails at evaluation on a recent Job CREATE request in namespace "ml"`))
	})

	It("keeps one request per interval, so that a busy server pays for a sample of its requests only", func() {
		DeferCleanup(policies.SetCanaryEvery(time.Hour))
		e := loadedEngine(dir, func(o *policies.Options) { o.DecisionCacheSize = -1 })
		judge := func(names ...string) {
			for _, n := range names {
				Expect(validate(e, createRequest(fixtures.Job("ml", n).Queue("lq").Obj()), snapshot()).Violations).To(HaveLen(1))
			}
		}
		judge("a", "b", "c")
		Expect(policies.RecentInputs(e)).To(Equal(1), "the first of a burst only")

		policies.SetCanaryEvery(0)
		judge("d", "e")
		Expect(policies.RecentInputs(e)).To(Equal(3), "a quiet server keeps every request")
	})

	It("takes the same set as the first one: with nothing serving, nothing is lost", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", conflicting)})
		e := loadedEngine(dir)
		v, _ := e.Version()
		Expect(v).To(Equal(uint64(1)))
	})

	It("tries only the policies that apply to each recent request", func() {
		e := loadedEngine(dir)
		Expect(messagesFor(e)()).To(ConsistOf("good"))
		// The broken policy applies to RayJobs only; the recent input is a Job.
		writeFiles(dir, map[string]string{"p.rego": rayJobsOnly + conflictingInML + "\n"})
		Expect(e.Load()).To(Succeed())
	})

	It("tries a new set on a sample of every kind, so a kind nobody sent lately is covered too", func() {
		e := loadedEngine(dir)
		Expect(messagesFor(e)()).To(ConsistOf("good"), "only Jobs were sent")
		writeFiles(dir, map[string]string{"p.rego": rayJobsOnly + conflicting + "\n"})
		err := e.Load()
		var le *policies.LoadError
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Problems[0].Message).To(ContainSubstring(`t.p fails at evaluation on the sample RayJob CREATE request in namespace "default"`))
		Expect(le.Problems[0].File).To(Equal(filepath.Join(dir, "p.rego")))
		v, _ := e.Version()
		Expect(v).To(Equal(uint64(1)), "the last good set keeps serving")
	})

	It("does not hold against a new set a sample the serving set fails on too", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", conflicting)})
		e := loadedEngine(dir)
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", conflicting+"\n\n# edited\n")})
		Expect(e.Load()).To(Succeed(), "not a regression")
		v, _ := e.Version()
		Expect(v).To(Equal(uint64(2)))
	})

	It("has a sample of every kind of the catalog, each of which builds", func() {
		kinds, err := policies.CanarySampleKinds()
		Expect(err).NotTo(HaveOccurred())
		var want []string
		for _, in := range integrations.All() {
			want = append(want, in.GVK.GroupKind().String())
		}
		Expect(kinds).To(ConsistOf(want))
	})
})

// rayJobsOnly is the METADATA of a policy for RayJobs, in package t.p.
const rayJobsOnly = `# METADATA
# custom:
#   match:
#     kinds: [{apiGroups: [ray.io], kinds: [RayJob]}]
package t.p

`
