package admission_test

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the rule registry", func() {
	It("names, for every built-in rule, a step of the built pipeline that checks it", func() {
		// The policy step is added by the caller (the server, the reviewer), as here.
		p, err := guard.Build(config.Default(), "kueue-guard-system", policyStep{})
		Expect(err).NotTo(HaveOccurred())
		steps := p.StepNames()
		Expect(guard.Rules()).To(HaveLen(22), "20 guard rules, the policy step's and one the API server alone checks")
		for _, r := range guard.Rules() {
			if r.Check == "" {
				Expect(r.CEL).NotTo(BeNil(), "%s: a rule without a step has a CEL twin", r.ID)
				continue
			}
			Expect(steps).To(ContainElement(r.Check), r.ID)
			Expect(r.ID).To(HavePrefix(guard.RuleNamespace+"."), "built-in ids are in the kueue_guard namespace")
		}
	})

	It("refuses a rule that breaks the id scheme or says nothing about itself", func() {
		Expect(func() {
			guard.Register(guard.Rule{ID: "kebab-case", Title: "t", Doc: "d", Check: "c", Enforcement: guard.EnforcementDeny})
		}).To(Panic())
		Expect(func() {
			guard.Register(guard.Rule{ID: "kueue_guard.no_doc", Title: "t", Check: "c", Enforcement: guard.EnforcementDeny})
		}).To(Panic())
		Expect(func() {
			guard.Register(guard.Rule{ID: "kueue_guard.no_check", Title: "t", Doc: "d", Enforcement: guard.EnforcementDeny})
		}).To(Panic(), "neither a step nor a CEL twin checks it")
		Expect(func() {
			guard.Register(guard.Rule{ID: guard.RuleUntrustedOwner, Title: "t", Doc: "d", Check: "c", Enforcement: guard.EnforcementDeny})
		}).To(Panic(),
			"an id is registered once")
	})
})

// policyStep stands in the pipeline under the policy step's name only: the test
// reads step names, and runs nothing.
type policyStep struct{}

func (policyStep) Name() string { return policies.StepName }

func (policyStep) Handles(admissionv1.Operation) bool { return true }

func (policyStep) Validate(context.Context, *guard.Request, guard.Target, cluster.View, *guard.Decision) error {
	return nil
}

var _ = Describe("the workload guards' CEL twins", func() {
	It("exist for every built-in rule, or the rule says why only the webhook can judge it", func() {
		for _, r := range guard.Rules() {
			Expect(r.CEL != nil || r.WebhookOnly != "").To(BeTrue(), "%s has neither a twin nor a reason", r.ID)
		}
	})

	variable := func(id, name string) string {
		r, ok := guard.LookupRule(id)
		Expect(ok).To(BeTrue())
		Expect(r.CEL).NotTo(BeNil(), "%s has a twin", id)
		for _, v := range r.CEL.Variables {
			if v.Name == name {
				return v.Expression
			}
		}
		Fail("no variable " + name)
		return ""
	}

	It("test every level of a nested suspend field before reading it, as a missing field is an error in CEL", func() {
		Expect(variable(guard.RuleOnlyKueueReleases, "resumes")).To(ContainSubstring(
			"(variables.key == 'kubeflow.org/MPIJob' ? ((has(oldObject.spec) && " +
				"has(oldObject.spec.runPolicy) && has(oldObject.spec.runPolicy.suspend) && oldObject.spec.runPolicy.suspend == true) && " +
				"!(has(object.spec) && has(object.spec.runPolicy) && has(object.spec.runPolicy.suspend) && object.spec.runPolicy.suspend == true)) : "))
	})

	It("spare a RayJob on an existing cluster, which Kueue ignores, and read Pods' gate", func() {
		resumes := variable(guard.RuleOnlyKueueReleases, "resumes")
		Expect(resumes).To(ContainSubstring("variables.key == 'ray.io/RayJob' ? ((has(oldObject.spec)"))
		Expect(resumes).To(ContainSubstring("!(has(object.spec.clusterSelector) && size(object.spec.clusterSelector) > 0)"))
		Expect(resumes).To(ContainSubstring("oldObject.spec.schedulingGates.exists(g, g.name == 'kueue.x-k8s.io/admission')"))
	})

	It("count an owner by exact apiVersion and kind, as Kueue's walk does", func() {
		Expect(variable(guard.RuleUntrustedOwner, "counted")).To(ContainSubstring("'batch/v1/Job'"))
		Expect(variable(guard.RuleUntrustedOwner, "interim")).To(Equal("variables.ownerKey == 'apps/v1/ReplicaSet'"))
	})
})
