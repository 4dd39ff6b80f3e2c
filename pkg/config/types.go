// Package config holds kueue-guard's versioned, user-facing configuration file: its types, defaults,
// validation and loading. The file is read and validated once at start-up and then passed whole to the
// server and the offline reviewer, so that every later decision can trust it without re-checking.
package config

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// GroupVersion and Kind identify the file format. They are checked before anything else so that a file
// meant for another tool (or a future, incompatible version of this one) is rejected instead of being
// half-understood.
const (
	GroupVersion = "config.kueue-guard.io/v1alpha1"
	Kind         = "Configuration"
)

// Defaults that users see in the documentation and the Helm chart; kept here so that there is one
// source of truth for them.
const (
	// DefaultKueueNamespace is where a standard Kueue installation runs.
	DefaultKueueNamespace = "kueue-system"
	// DefaultKueueControllerName is the Deployment name of a standard Kueue installation, the one
	// controller allowed by default under the managed profile.
	DefaultKueueControllerName = "kueue-controller-manager"
	// DefaultPolicyDirectory is where the Helm chart mounts the Rego policies.
	DefaultPolicyDirectory = "/etc/kueue-guard/policies"
	// DefaultDecisionCacheSize is how many policy decisions are reused by default: a few thousand
	// shapes of workload (a CronJob's Jobs, a sweep's trials) at a few kilobytes each.
	DefaultDecisionCacheSize = 4096
	// KubeSystemNamespace is always exempt: mutating or rejecting system components could break the
	// cluster the webhook itself depends on.
	KubeSystemNamespace = "kube-system"
)

// InstallProfile says who owns the Kueue installation, which decides where the set of enabled
// integrations comes from and which Kueue controllers are expected.
type InstallProfile string

const (
	// ProfileManaged is a Kueue installation run by a platform (fixed integrations, one known controller).
	ProfileManaged InstallProfile = "managed"
	// ProfileOSS is a self-installed upstream Kueue whose integrations the user chooses.
	ProfileOSS InstallProfile = "oss"
)

// MissingLocalQueueAction says what to do with a workload whose queue name could not be defaulted,
// because a silently unqueued workload bypasses Kueue's quota entirely.
type MissingLocalQueueAction string

const (
	// MissingLocalQueueWarn admits the workload with an admission warning.
	MissingLocalQueueWarn MissingLocalQueueAction = "warn"
	// MissingLocalQueueDeny rejects the workload so that nothing runs outside Kueue.
	MissingLocalQueueDeny MissingLocalQueueAction = "deny"
	// MissingLocalQueueIgnore admits the workload silently (for gradual roll-outs).
	MissingLocalQueueIgnore MissingLocalQueueAction = "ignore"
)

// IntegrationAction says what to do with a workload of a kind whose Kueue integration is not enabled:
// Kueue would ignore it, so it would run without quota.
type IntegrationAction string

const (
	// IntegrationActionDeny rejects such workloads.
	IntegrationActionDeny IntegrationAction = "deny"
	// IntegrationActionWarn admits them with an admission warning.
	IntegrationActionWarn IntegrationAction = "warn"
)

// OnError says how a policy evaluation failure (not a policy violation) is treated; it is the
// fail-open versus fail-closed choice for the Rego step.
type OnError string

const (
	// OnErrorDeny fails closed: the request is rejected when a policy cannot be evaluated.
	OnErrorDeny OnError = "deny"
	// OnErrorAllow fails open: the request is admitted with a warning.
	OnErrorAllow OnError = "allow"
)

// Configuration is the whole configuration file. Its JSON names are the user-facing API: add to them,
// never rename them.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// InstallProfile selects how Kueue was installed; see InstallProfile.
	InstallProfile InstallProfile `json:"installProfile,omitempty"`
	// KueueNamespace is where Kueue and its Configuration live.
	KueueNamespace string `json:"kueueNamespace,omitempty"`
	// ExemptNamespaces are never mutated or validated, in addition to kube-system, the webhook's own
	// namespace and KueueNamespace (see IsExempt).
	ExemptNamespaces []string `json:"exemptNamespaces,omitempty"`
	// Defaulting configures queue-name defaulting on the mutating path.
	Defaulting Defaulting `json:"defaulting,omitempty"`
	// Integrations configures the guard against workloads that Kueue would not manage.
	Integrations Integrations `json:"integrations,omitempty"`
	// Controllers configures the guard against a second Kueue controller.
	Controllers Controllers `json:"controllers,omitempty"`
	// Policies configures the Rego policy step.
	Policies Policies `json:"policies,omitempty"`
	// Trust says whose requests are believed when they claim, through an owner reference, that an
	// object is part of another workload.
	Trust Trust `json:"trust,omitempty"`
	// Audit configures the loop that judges the workloads the cluster already runs.
	Audit Audit `json:"audit,omitempty"`
	// KueueAbsent says what happens to a new queued workload while Kueue is not serving (its
	// mutating webhooks are not registered, or its CRDs are not served): without Kueue's webhook
	// nothing suspends it, and it would run outside quota. Default suspend.
	KueueAbsent KueueAbsentAction `json:"kueueAbsent,omitempty"`
	// Simulation configures the admission warning with Kueue's verdict on a new queued
	// workload (what `kueue-guard simulate` says of it), computed from the informer cache.
	Simulation Simulation `json:"simulation,omitempty"`
}

// Simulation configures the simulate warning.
type Simulation struct {
	// Warn is which creates of a queued workload get the warning: dryRun (kubectl apply
	// --dry-run=server and other dry runs, the default), create (every create), never.
	Warn SimulationWarn `json:"warn,omitempty"`
}

// SimulationWarn is which creates get the simulate warning.
type SimulationWarn string

const (
	// SimulationWarnDryRun warns on dry-run creates only.
	SimulationWarnDryRun SimulationWarn = "dryRun"
	// SimulationWarnCreate warns on every create of a queued workload.
	SimulationWarnCreate SimulationWarn = "create"
	// SimulationWarnNever never warns.
	SimulationWarnNever SimulationWarn = "never"
)

// KueueAbsentAction is what kueue-guard does with a new queued workload while Kueue is not
// serving.
type KueueAbsentAction string

const (
	// KueueAbsentSuspend creates it suspended (spec.suspend and the like), or a Pod with Kueue's
	// scheduling gate, so that it waits for Kueue; a kind with neither is denied.
	KueueAbsentSuspend KueueAbsentAction = "suspend"
	// KueueAbsentDeny denies it.
	KueueAbsentDeny KueueAbsentAction = "deny"
	// KueueAbsentAllow admits it as it is (it runs outside quota until Kueue is back).
	KueueAbsentAllow KueueAbsentAction = "allow"
)

// Audit configures serve's audit loop: every interval, one replica (the holder of a Lease) lists
// every top-level workload and judges it with the admission pipeline, as if it were created now.
type Audit struct {
	// Interval is the time between the start of two runs; "0s" turns the loop off. Default 60s.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Reports writes the results as openreports.io/v1alpha1 Reports, one per namespace (the CRD
	// must be installed); false keeps them to the metrics. Default true.
	Reports *bool `json:"reports,omitempty"`
	// MaxObjects bounds the workloads one run judges; the rest wait for a later run. Default 10000.
	MaxObjects int `json:"maxObjects,omitempty"`
	// MaxResultsPerReport bounds the results one Report holds (its summary still counts them
	// all). Default 1000.
	MaxResultsPerReport int `json:"maxResultsPerReport,omitempty"`
}

// Audit defaults.
const (
	DefaultAuditInterval            = 60 * time.Second
	DefaultAuditMaxObjects          = 10000
	DefaultAuditMaxResultsPerReport = 1000
)

// Enabled reports whether the audit loop runs.
func (a Audit) Enabled() bool { return a.Interval != nil && a.Interval.Duration > 0 }

// Trust lists the requesters whose owner references kueue-guard believes. An owner reference is a
// field the requester writes: a namespace user can name any owner, real or not. Only when the request
// comes from a controller listed here (the Job controller creating a Job's pods, the JobSet operator
// creating a JobSet's Jobs) is an object with a Kueue-managed controller owner treated as part of that
// owner instead of as a workload of its own.
type Trust struct {
	// Controllers are usernames ("system:serviceaccount:kube-system:job-controller"), username
	// prefixes ending in "*" ("system:serviceaccount:kube-system:*") and groups ("group:NAME").
	// Empty means DefaultTrustedControllers(kueueNamespace).
	Controllers []string `json:"controllers,omitempty"`
}

// BackstopAction says what the validating webhook does with a new workload that arrives without a
// queue although defaulting would have given it one: the mutating webhook (failurePolicy Ignore) did
// not run, timed out, or was bypassed.
type BackstopAction string

const (
	// BackstopDeny rejects it; the client retries and defaulting gets another chance.
	BackstopDeny BackstopAction = "deny"
	// BackstopWarn admits it unqueued with a warning.
	BackstopWarn BackstopAction = "warn"
	// BackstopOff admits it silently.
	BackstopOff BackstopAction = "off"
)

// UnqueuedAction says what to do with a new workload for which no source yields a queue: Kueue
// ignores it, so it runs outside every quota.
type UnqueuedAction string

const (
	// UnqueuedAllow admits it (Kueue's own behaviour).
	UnqueuedAllow UnqueuedAction = "allow"
	// UnqueuedWarn admits it with a warning.
	UnqueuedWarn UnqueuedAction = "warn"
	// UnqueuedDeny rejects it, for platforms where nothing may run outside Kueue.
	UnqueuedDeny UnqueuedAction = "deny"
)

// Unqueued configures what happens to workloads that get no queue at all.
type Unqueued struct {
	// Action applies in the namespaces NamespaceSelector selects.
	Action UnqueuedAction `json:"action,omitempty"`
	// NamespaceSelector restricts Action to matching namespaces; nil or empty matches every namespace.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// Selector returns the namespace selector, nil meaning every namespace.
func (u Unqueued) Selector() (labels.Selector, error) {
	if u.NamespaceSelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(u.NamespaceSelector)
}

// Defaulting decides how a workload without a queue name gets one, so that users need not know their
// LocalQueue's name.
type Defaulting struct {
	// MissingLocalQueue is applied when the LocalQueue that defaulting (or the workload's own label)
	// names does not exist in the namespace. Workloads for which no source yields a queue at all are
	// governed by Unqueued.
	MissingLocalQueue MissingLocalQueueAction `json:"missingLocalQueue,omitempty"`
	// Backstop is applied on the validating path to a new workload without a queue that defaulting
	// would have labeled.
	Backstop BackstopAction `json:"backstop,omitempty"`
	// Unqueued is applied to new workloads for which no source yields a queue.
	Unqueued Unqueued `json:"unqueued,omitempty"`
	// Rules are consulted after the namespace annotation and before Kueue's `default` LocalQueue,
	// in order; the first matching rule wins.
	Rules []DefaultingRule `json:"rules,omitempty"`
}

// DefaultingRule maps a class of workloads (by namespace labels and requested resource) to a
// LocalQueue, for clusters where one queue per namespace is not enough (e.g. GPU jobs).
type DefaultingRule struct {
	// Name identifies the rule in the `kueue-guard.io/defaulted-by` annotation and in messages.
	Name string `json:"name"`
	// NamespaceSelector restricts the rule to matching namespaces; nil matches every namespace.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// RequestsResource restricts the rule to workloads that request this resource (e.g. nvidia.com/gpu).
	RequestsResource string `json:"requestsResource,omitempty"`
	// LocalQueue is the queue name to set.
	LocalQueue string `json:"localQueue"`
	// PriorityClass is an optional WorkloadPriorityClass name to set as well.
	PriorityClass string `json:"priorityClass,omitempty"`
}

// Integrations configures the integration guard.
type Integrations struct {
	// Action is applied to workloads of a kind whose Kueue integration is not enabled.
	Action IntegrationAction `json:"action,omitempty"`
	// Frameworks lists the enabled Kueue framework names (e.g. batch/job) for the oss profile when
	// Kueue's own Configuration cannot or should not be read; empty means read it.
	Frameworks []string `json:"frameworks,omitempty"`
}

// Controllers configures the controller-singleton guard: two Kueue controllers fighting over the same
// objects corrupt quota accounting.
type Controllers struct {
	// Allowed lists the Kueue controllers that may run.
	Allowed []ControllerRef `json:"allowed,omitempty"`
}

// ControllerRef names one Kueue controller Deployment that is allowed to run.
type ControllerRef struct {
	// Namespace of the controller; empty defaults to KueueNamespace.
	Namespace string `json:"namespace,omitempty"`
	// Name of the controller Deployment.
	Name string `json:"name"`
}

// Policies configures the Rego policy step.
type Policies struct {
	// Directory holds the Rego policies (and their data); it is watched for changes.
	Directory string `json:"directory,omitempty"`
	// OnError decides whether an evaluation failure rejects or admits the request.
	OnError OnError `json:"onError,omitempty"`
	// AllowBuiltins are Rego built-ins policies may call beyond the
	// deterministic, bounded ones always offered: the clock, randomness and
	// unbounded generators (time.now_ns, rand.intn, uuid.rfc4122, numbers.range,
	// numbers.range_step, net.cidr_expand). With them the webhook and a later
	// review may disagree. Network built-ins are never offered.
	AllowBuiltins []string `json:"allowBuiltins,omitempty"`
	// DecisionCacheSize bounds the decisions kueue-guard reuses for requests
	// whose input, in every part the policies read, was judged before (the
	// same shape of workload under the same policies and cluster state); 0
	// turns the reuse off. Default: DefaultDecisionCacheSize. A set calling the clock or randomness
	// never reuses a decision.
	DecisionCacheSize *int32 `json:"decisionCacheSize,omitempty"`
}

// EngineCacheSize is DecisionCacheSize as the policy engine takes it: 0 for
// its default, negative for none.
func (p Policies) EngineCacheSize() int {
	switch {
	case p.DecisionCacheSize == nil:
		return 0
	case *p.DecisionCacheSize == 0:
		return -1
	}
	return int(*p.DecisionCacheSize)
}

// Selector returns the rule's namespace selector, treating a nil selector as "every namespace"
// (metav1.LabelSelectorAsSelector would treat it as "no namespace").
func (r DefaultingRule) Selector() (labels.Selector, error) {
	if r.NamespaceSelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(r.NamespaceSelector)
}

// IsExempt reports whether objects in namespace must be left alone: kube-system, the webhook's own
// namespace and Kueue's are always exempt, so that a broken webhook or policy cannot lock out the
// components needed to repair it (Kueue's namespace is written by admins only).
func (c *Configuration) IsExempt(namespace, ownNamespace string) bool {
	if namespace == KubeSystemNamespace || (ownNamespace != "" && namespace == ownNamespace) {
		return true
	}
	if c == nil {
		return false
	}
	return (c.KueueNamespace != "" && namespace == c.KueueNamespace) || slices.Contains(c.ExemptNamespaces, namespace)
}
