package policies_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A rule no request changes is evaluated once, when its set loads. The
// adversary here is the policy author's own Rego: a with modifier that
// overrides the setting for one expression, and a setting that cannot be
// evaluated at all must each answer as OPA would on every request.
var _ = Describe("Rules that no request changes", func() {
	outcome := func(ctx context.Context, e *policies.Engine, parallelism int64) []string {
		in, err := policies.BuildInput(ctx, createRequest(gpuJob("j", parallelism, "1")), admission.Target{}, gpuCluster("0"))
		Expect(err).NotTo(HaveOccurred())
		res := e.Evaluate(ctx, in)
		out := []string{}
		for _, f := range res.Findings {
			out = append(out, fmt.Sprintf("%s: %s", f.Policy.ID, f.Message))
		}
		for _, f := range res.Failures {
			id := "" // a timeout fails the evaluation, not one policy
			if f.Policy != nil {
				id = f.Policy.ID
			}
			out = append(out, fmt.Sprintf("failed %s: %s", id, f.Reason))
		}
		slices.Sort(out)
		return out
	}

	It("answer as OPA does, under a with modifier and when the rule fails", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{
			"data.yaml": "settings:\n  limit: 2\n",
			"cfg.rego":  "package cfg\n\nlimit := data.settings.limit\n\ndoubled := limit * 2\n\nbad := to_number(\"two\")\n",
			"limit.rego": policy("limit", "deny", `deny contains msg if {
	n := input.workload.podSets[0].count
	n > data.cfg.limit
	msg := sprintf("%d pods, more than %d", [n, data.cfg.limit])
}

warn contains msg if {
	d := data.cfg.doubled with data.settings.limit as 50
	msg := sprintf("doubled under with: %d, without: %d", [d, data.cfg.doubled])
}`),
			"broken.rego": policy("broken", "deny", `deny contains "never" if data.cfg.bad > 0`),
		})
		fast := loadedEngine(dir)
		full := loadedEngine(dir, noDecisionCache)
		policies.UseOPARuleCache(full)
		for _, n := range []int64{1, 4, 1, 4} {
			got := outcome(ctx, fast, n)
			Expect(got).To(Equal(outcome(ctx, full, n)), "parallelism %d", n)
			Expect(got).To(ContainElement("limit: doubled under with: 100, without: 4"))
			Expect(got).To(ContainElement(HavePrefix("failed broken: ")))
		}
		Expect(outcome(ctx, fast, 4)).To(ContainElement("limit: 4 pods, more than 2"))
	})

	It("follow the data when the set is loaded again, and never hold the clock still", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		files := map[string]string{
			"data.yaml": "settings:\n  limit: 2\n",
			"cfg.rego":  "package cfg\n\nlimit := data.settings.limit\n\nnow := time.now_ns()\n",
			"p.rego": policy("p", "warn", `warn contains sprintf("limit %d", [data.cfg.limit]) if true

warn contains sprintf("now %d", [data.cfg.now]) if true`),
		}
		writeFiles(dir, files)
		e := loadedEngine(dir, func(o *policies.Options) { o.AllowBuiltins = []string{"time.now_ns"} })
		first := outcome(ctx, e, 1)
		Expect(first).To(ContainElement("p: limit 2"))
		Eventually(func() []string { return outcome(ctx, e, 1) }).ShouldNot(ContainElement(first[1]),
			"the clock is read by each evaluation")

		files["data.yaml"] = "settings:\n  limit: 3\n"
		writeFiles(dir, files)
		Expect(e.Load()).To(Succeed())
		Expect(outcome(ctx, e, 1)).To(ContainElement("p: limit 3"))
	})

	// A broken setting must not keep the set from loading: evaluated at load
	// without a bound, this rule (10^12 iterations) would never return.
	It("leave a rule that never finishes to each request's deadline", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		big := make([]string, 10000)
		for i := range big {
			big[i] = strconv.Itoa(i)
		}
		writeFiles(dir, map[string]string{
			"data.json": `{"big": [` + strings.Join(big, ",") + `]}`,
			"cfg.rego":  "package cfg\n\nforever := count([1 | some a in data.big; some b in data.big; some c in data.big])\n",
			"slow.rego": policy("slow", "deny", `deny contains "never" if data.cfg.forever > 0`),
		})
		e := loadedEngine(dir, func(o *policies.Options) { o.Timeout = 100 * time.Millisecond })
		Expect(outcome(ctx, e, 1)).To(ConsistOf(And(HavePrefix("failed : "), ContainSubstring("did not finish within"))))
	}, SpecTimeout(time.Minute))
})
