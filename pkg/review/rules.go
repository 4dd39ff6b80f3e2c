package review

import (
	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// builtinRules describes the pipeline's own rules (the admission package's rule
// constants) for SARIF and JUnit, which list every rule a finding refers to. A
// test checks that every rule constant of the pipeline has an entry.
var builtinRules = map[string]RuleInfo{
	admission.RuleMissingLocalQueue: {
		Title: "LocalQueue exists",
		Description: "A workload's LocalQueue (set, or chosen by queue defaulting) must exist in its namespace; " +
			"otherwise the workload stays pending. Enforced per defaulting.missingLocalQueue (warn, deny, ignore).",
		Enforcement: string(admission.EnforcementWarn),
	},
	admission.RuleUnsupportedIntegration: {
		Title: "Kueue manages the workload's kind",
		Description: "A queued workload of a kind whose Kueue integration the install does not enable would run " +
			"outside quota (integrations.action).",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleQueueOnHold: {
		Title:       "Queue is not on hold",
		Description: "The workload's LocalQueue or ClusterQueue has a stopPolicy that holds it: nothing is admitted until it resumes.",
		Enforcement: string(admission.EnforcementWarn),
	},
	admission.RuleImmutableQueueName: {
		Title:       "Queue of a running workload is immutable",
		Description: "kueue.x-k8s.io/queue-name cannot change while the workload is running (UPDATE only).",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleKueueSingleton: {
		Title:       "One Kueue controller manager",
		Description: "An object that would run a second Kueue controller manager is denied: Kueue is a cluster singleton.",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleKueueWebhookSingleton: {
		Title: "One set of Kueue webhooks",
		Description: "A webhook configuration registering Kueue's webhooks for a service outside the allowed Kueue " +
			"controller's namespace is denied. The API server never sends webhook configurations to admission " +
			"webhooks, so only the reviewer checks this rule.",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleQueueLabelRemoved: {
		Title: "A queued workload stays queued",
		Description: "In a namespace whose workloads must be queued (defaulting gives them a queue, or " +
			"defaulting.unqueued.action is deny), only trusted controllers may remove kueue.x-k8s.io/queue-name (UPDATE only).",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleResumeWithoutQueue: {
		Title: "No resume without a queue",
		Description: "In a namespace whose workloads must be queued, only trusted controllers may resume (spec.suspend " +
			"true to false, or Kueue's scheduling gate removed) a workload that has no queue (UPDATE only).",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleLabelMismatch: {
		Title: "Template labels agree with the workload's",
		Description: "A queue-name or priority-class label in a pod template (or any nested template) must equal " +
			"the workload's own: Kueue and the pods it admits read those places too.",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleDefaultingBackstop: {
		Title: "Defaulting ran",
		Description: "A new workload without a queue in a namespace where queue defaulting would give it one: the " +
			"mutating webhook did not run. Enforced per defaulting.backstop (deny, warn, off).",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RuleUnqueuedWorkload: {
		Title: "Workload has a queue",
		Description: "A new workload for which no source yields a queue would run outside Kueue. Enforced per " +
			"defaulting.unqueued (allow, warn, deny) in the namespaces its selector matches.",
		Enforcement: string(admission.EnforcementWarn),
	},
	admission.RuleUntrustedOwner: {
		Title: "Only a workload's controller creates its parts",
		Description: "An object whose controller owner is a kind Kueue manages, from a requester that is not in " +
			"trust.controllers, is denied: Kueue would count it as part of the owner and never queue it.",
		Enforcement: string(admission.EnforcementDeny),
	},
	admission.RulePodGroupResize: {
		Title: "A queued pod group keeps its size",
		Description: "A queued StatefulSet is admitted as one pod group of fixed size: it may be scaled to 0 and " +
			"back, not between two sizes (UPDATE and the scale subresource).",
		Enforcement: string(admission.EnforcementDeny),
	},
	policies.StepName: {
		Title:       "Policy set evaluates",
		Description: "The Rego policy set could not be evaluated for the workload; policies.onError decides (deny or allow).",
		Enforcement: string(admission.EnforcementDeny),
	},
}

// ruleInfo describes a rule id: a policy of the loaded set, a built-in rule, or
// (for a policy that failed to evaluate) the bare id.
func ruleInfo(id string, loaded map[string]*policies.Policy) RuleInfo {
	if p, ok := loaded[id]; ok {
		return RuleInfo{ID: id, Title: p.Title, Description: p.Description, Enforcement: string(p.Enforcement),
			Policy: true, Files: p.Files}
	}
	if r, ok := builtinRules[id]; ok {
		r.ID = id
		return r
	}
	return RuleInfo{ID: id, Enforcement: string(admission.EnforcementDeny)}
}
