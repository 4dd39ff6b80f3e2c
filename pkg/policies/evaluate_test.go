package policies_test

import (
	"context"
	"errors"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// slowPolicy never finishes in time. numbers.range is unbounded, so it is
// offered only on opt-in (slowBuiltins).
func slowBuiltins(o *policies.Options) { o.AllowBuiltins = []string{"numbers.range"} }

const slowPolicy = `deny contains "never" if {
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i * j == -1
}`

func histogramCount(reg *prometheus.Registry, name string) uint64 {
	mfs, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

var _ = Describe("Evaluating", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("applies each enforcement mode and records metrics", func() {
		writeFiles(dir, map[string]string{
			"deny.rego":   policy("t.denies", "deny", `deny contains "denied" if true`+"\n"+`warn contains "only a warning" if true`),
			"warn.rego":   policy("t.warns", "warn", `deny contains {"msg": "warned", "field": "spec.x"} if true`),
			"dryrun.rego": policy("t.dry", "dryrun", `deny contains "dry" if true`+"\n"+`warn contains "dry warning" if true`),
			"quiet.rego":  policy("t.quiet", "", `deny contains "never" if false`),
		})
		e, reg := newEngine(dir)
		Expect(e.Load()).To(Succeed())
		d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		Expect(d.Violations).To(ConsistOf(
			admission.Violation{Rule: "t.denies", Message: "denied", Enforcement: admission.EnforcementDeny},
			admission.Violation{Rule: "t.denies", Message: "only a warning", Enforcement: admission.EnforcementWarn},
			admission.Violation{Rule: "t.warns", Field: fieldpath.Parse("spec.x"), Message: "warned", Enforcement: admission.EnforcementWarn},
			admission.Violation{Rule: "t.dry", Message: "dry", Enforcement: admission.EnforcementDryRun},
			admission.Violation{Rule: "t.dry", Message: "dry warning", Enforcement: admission.EnforcementDryRun},
		))
		Expect(d.Warnings).To(ConsistOf("[t.denies] only a warning", "[t.warns] warned"))
		Expect(d.Allowed()).To(BeFalse())

		m := e.Metrics()
		Expect(metricValue(m.Violations.WithLabelValues("t.denies", "deny"))).To(Equal(1.0))
		Expect(metricValue(m.Violations.WithLabelValues("t.dry", "dryrun"))).To(Equal(2.0))
		Expect(metricValue(m.Policies)).To(Equal(4.0))
		Expect(histogramCount(reg, "kueue_guard_policy_evaluation_duration_seconds")).To(Equal(uint64(1)))
	})

	// The query reads a rule defined only by "contains" rules directly, and any
	// other rule through a comprehension: both must report the same findings,
	// and a rule that is undefined for the input is no finding, not a failure.
	It("reads every form of deny and warn: multi-value, complete, undefined, split across files", func() {
		writeFiles(dir, map[string]string{
			"multi.rego":     policy("t.multi", "", `deny contains "multi" if true`+"\n"+`deny contains "never" if false`),
			"empty.rego":     policy("t.empty", "", `deny contains "never" if false`+"\n"+`warn contains "never" if false`),
			"complete.rego":  policy("t.complete", "", `deny := {"complete"} if true`+"\n"+`warn := {"complete warning"}`),
			"undefined.rego": policy("t.undefined", "", `deny := {"never"} if false`),
			"default.rego":   policy("t.default", "", "default deny := set()\n"+`deny := {"defaulted"} if false`),
			"split_a.rego":   policy("t.split", "", `deny contains "from a" if true`),
			"split_b.rego":   "package t.split\n\n" + `deny contains "from b" if true`,
		})
		e, _ := newEngine(dir)
		Expect(e.Load()).To(Succeed())
		d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		Expect(rules(d)).To(ConsistOf("t.multi/deny", "t.complete/deny", "t.complete/warn", "t.split/deny", "t.split/deny"))
		Expect(d.Warnings).To(ConsistOf("[t.complete] complete warning"))
	})

	It("lets dry-run policies never change the answer", func() {
		writeFiles(dir, map[string]string{"dryrun.rego": policy("t.dry", "dryrun", `deny contains "dry" if true`)})
		d := validate(loadedEngine(dir), createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		Expect(d.Allowed()).To(BeTrue())
		Expect(d.Warnings).To(BeEmpty())
		Expect(rules(d)).To(ConsistOf("t.dry/dryrun"))
	})

	It("does not evaluate objects that are not queued", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.all", "", `deny contains "x" if true`)})
		e, reg := newEngine(dir)
		Expect(e.Load()).To(Succeed())
		d := validate(e, createRequest(fixtures.Job("ml", "j").Obj()), snapshot())
		Expect(d.Violations).To(BeEmpty())
		Expect(histogramCount(reg, "kueue_guard_policy_evaluation_duration_seconds")).To(BeZero())
	})

	It("stops at the deadline and fails by onError", func() {
		writeFiles(dir, map[string]string{"slow.rego": policy("t.slow", "", slowPolicy)})
		e := loadedEngine(dir, slowBuiltins, func(o *policies.Options) { o.Timeout = 50 * time.Millisecond })
		start := time.Now()
		d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
		Expect(d.Denials()).To(HaveLen(1))
		Expect(d.Denials()[0].Rule).To(Equal(policies.RulePolicyEvaluation))
		Expect(d.Denials()[0].Message).To(MatchRegexp(
			`^policy engine failed evaluating the policy set: evaluation did not finish within \S+ \(deadline 50ms\); the request was denied because policies.onError is deny$`))
		Expect(metricValue(e.Metrics().Errors.WithLabelValues("deadline"))).To(Equal(1.0))
	})

	It("fails a request that gets no evaluation slot before its deadline", func() {
		writeFiles(dir, map[string]string{"slow.rego": policy("t.slow", "", slowPolicy)})
		e := loadedEngine(dir, slowBuiltins, func(o *policies.Options) {
			o.MaxConcurrent = 1
			o.Timeout = time.Minute
		})
		busyCtx, stopBusy := context.WithCancel(context.Background())
		busy := make(chan *policies.Result, 1)
		go func() { busy <- e.Evaluate(busyCtx, ast.NewObject()) }()
		Eventually(e.SlotsInUse).Should(Equal(1))

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		res := e.Evaluate(ctx, ast.NewObject())
		Expect(res.Failures).To(HaveLen(1))
		Expect(res.Failures[0].Code).To(Equal("no_slot"))
		Expect(res.Failures[0].Reason).To(MatchRegexp(`^no evaluation slot became free within \S+ \(1 evaluations already running\)$`))

		stopBusy()
		var r *policies.Result
		Eventually(busy).Should(Receive(&r))
		Expect(r.Failures).To(HaveLen(1))
		Expect(r.Failures[0].Code).To(Equal("cancelled"))
		Expect(e.SlotsInUse()).To(BeZero())
	})

	It("builds a request's input only once it holds a slot, so that waiting requests hold no input", func() {
		writeFiles(dir, map[string]string{"slow.rego": policy("t.slow", "", slowPolicy)})
		e := loadedEngine(dir, slowBuiltins, func(o *policies.Options) {
			o.MaxConcurrent = 1
			o.Timeout = time.Minute
		})
		busyCtx, stopBusy := context.WithCancel(context.Background())
		defer stopBusy()
		go func() { e.Evaluate(busyCtx, ast.NewObject()) }()
		Eventually(e.SlotsInUse).Should(Equal(1))

		built := 0
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		res := e.Plan(nil).EvaluateBuilt(ctx, func(*policies.InputPaths) (ast.Value, error) { built++; return ast.NewObject(), nil }, nil)
		Expect(res.Failures).To(HaveLen(1))
		Expect(res.Failures[0].Code).To(Equal("no_slot"))
		Expect(built).To(BeZero(), "no slot, no input")

		stopBusy()
		Eventually(e.SlotsInUse).Should(BeZero())
		res = e.Plan(nil).EvaluateBuilt(context.Background(), func(*policies.InputPaths) (ast.Value, error) { built++; return nil, errors.New("bad object") }, nil)
		Expect(built).To(Equal(1))
		Expect(res.Failures).To(HaveLen(1))
		Expect(res.Failures[0].Reason).To(ContainSubstring("cannot read the workload: bad object"))
		Expect(e.SlotsInUse()).To(BeZero(), "the slot is given back")
	})

	It("caps warnings and keeps the policy id in front", func() {
		long := policies.WarningText("p", string(make([]byte, 1000)))
		Expect(len(long)).To(BeNumerically("<=", 256))
		Expect(long).To(HavePrefix("[p] "))
	})
})
