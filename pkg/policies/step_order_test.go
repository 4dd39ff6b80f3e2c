package policies_test

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// builtinDenial stands for a built-in guard that denies every request.
type builtinDenial struct{}

func (builtinDenial) Name() string                       { return "builtin" }
func (builtinDenial) Handles(admissionv1.Operation) bool { return true }
func (builtinDenial) Validate(_ context.Context, _ *admission.Request, _ admission.Target, _ cluster.View, d *admission.Decision) error {
	d.Deny("kueue_guard.test_builtin", nil, "denied by a built-in rule")
	return nil
}

var _ = Describe("the policy step after a built-in denial", func() {
	It("does not evaluate the policies of a request already denied", func() {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"p.rego": "package team.always\n\ndeny contains \"always\" if true\n"})
		e := loadedEngine(dir)
		job := fixtures.Job("ml", "j").Queue("lq").Obj()
		alone := validate(e, createRequest(job), snapshot())
		Expect(rules(alone)).To(ConsistOf("team.always/deny"))
		evaluations := func() uint64 {
			var m dto.Metric
			Expect(e.Metrics().Duration.WithLabelValues("ok").(prometheus.Metric).Write(&m)).To(Succeed())
			return m.GetHistogram().GetSampleCount()
		}
		before := evaluations()

		p := admission.NewPipeline(nil, nil, admission.Steps{Validating: []admission.ValidationStep{builtinDenial{}, policies.NewStep(e)}})
		d, err := p.Validate(context.Background(), createRequest(job), snapshot())
		Expect(err).NotTo(HaveOccurred())
		Expect(rules(d)).To(ConsistOf("kueue_guard.test_builtin/deny"))
		Expect(evaluations()).To(Equal(before), "no evaluation for a denied request")
	})
})
