package policies_test

import (
	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Test policies.
const (
	// brokenPolicy fails at evaluation time on every queued object whose name is
	// not a number: to_number errors, and strict built-in errors make it an error
	// rather than an undefined (silently passing) rule.
	brokenPolicy = `deny contains msg if {
	n := to_number(input.object.metadata.name)
	msg := sprintf("name %v", [n])
}`
	healthyPolicy = `deny contains {"msg": "queue lq is closed", "field": "metadata.labels"} if input.workload.queueName == "lq"`
)

var _ = Describe("When a policy fails", func() {
	var dir string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		writeFiles(dir, map[string]string{
			"broken.rego":  policy("t.broken", "", brokenPolicy),
			"healthy.rego": policy("t.healthy", "", healthyPolicy),
		})
	})

	It("denies by default, naming the policy and the reason, and keeps the others' results", func() {
		e := loadedEngine(dir)
		d := validate(e, createRequest(fixtures.Job("ml", "abc").Queue("lq").Obj()), snapshot())
		Expect(d.Allowed()).To(BeFalse())
		Expect(d.Denials()).To(HaveLen(2))
		broken := d.Denials()[0]
		if broken.Rule != "t.broken" {
			broken = d.Denials()[1]
		}
		Expect(broken.Rule).To(Equal("t.broken"))
		Expect(broken.Message).To(HavePrefix("policy engine failed evaluating t.broken: eval_builtin_error: to_number: "))
		Expect(broken.Message).To(ContainSubstring("(broken.rego:"))
		Expect(broken.Message).To(HaveSuffix("; the request was denied because policies.onError is deny"))
		Expect(broken.Message).NotTo(ContainSubstring("goroutine"))
		Expect(messagesOf(d, "t.healthy")).To(ConsistOf("queue lq is closed"))
		Expect(metricValue(e.Metrics().Errors.WithLabelValues("evaluation"))).To(Equal(1.0))
	})

	It("admits with a warning under onError allow, still enforcing the healthy policies", func() {
		e := loadedEngine(dir, func(o *policies.Options) { o.OnError = config.OnErrorAllow })
		d := validate(e, createRequest(fixtures.Job("ml", "abc").Queue("other").Obj()), snapshot())
		Expect(d.Allowed()).To(BeTrue())
		Expect(rules(d)).To(ConsistOf("t.broken/warn"))
		Expect(d.Warnings).To(HaveLen(1))
		Expect(d.Warnings[0]).To(HavePrefix("[t.broken] policy engine failed evaluating t.broken: eval_builtin_error: to_number"))
		Expect(d.Warnings[0]).To(HaveSuffix("; the request was admitted because policies.onError is allow"))

		d = validate(e, createRequest(fixtures.Job("ml", "abc").Queue("lq").Obj()), snapshot())
		Expect(d.Allowed()).To(BeFalse(), "a broken policy must not switch the healthy ones off")
		Expect(messagesOf(d, "t.healthy")).To(ConsistOf("queue lq is closed"))
	})

	It("evaluates normally where the policy does not fail", func() {
		d := validate(loadedEngine(dir), createRequest(fixtures.Job("ml", "42").Queue("other").Obj()), snapshot())
		Expect(d.Violations).To(ConsistOf(admission.Violation{Rule: "t.broken", Message: "name 42", Enforcement: admission.EnforcementDeny}))
	})
})
