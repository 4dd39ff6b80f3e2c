package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Default returns a fully defaulted, valid configuration for when no file is given.
func Default() *Configuration {
	c := &Configuration{}
	c.SetDefaults()
	return c
}

// SetDefaults fills every unset field with its documented default, so that the rest of the program
// never has to interpret an empty value. It is idempotent.
func (c *Configuration) SetDefaults() {
	if c.APIVersion == "" {
		c.APIVersion = GroupVersion
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	if c.InstallProfile == "" {
		c.InstallProfile = ProfileManaged
	}
	if c.KueueNamespace == "" {
		c.KueueNamespace = DefaultKueueNamespace
	}
	if c.KueueAbsent == "" {
		c.KueueAbsent = KueueAbsentSuspend
	}
	if c.Simulation.Warn == "" {
		c.Simulation.Warn = SimulationWarnDryRun
	}
	if c.Defaulting.MissingLocalQueue == "" {
		c.Defaulting.MissingLocalQueue = MissingLocalQueueWarn
	}
	if c.Defaulting.Backstop == "" {
		c.Defaulting.Backstop = BackstopDeny
	}
	if sel := c.Defaulting.Unqueued.NamespaceSelector; sel != nil && len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		c.Defaulting.Unqueued.NamespaceSelector = nil // {} and unset both select every namespace
	}
	if c.Defaulting.Unqueued.Action == "" {
		c.Defaulting.Unqueued.Action = UnqueuedAllow
	}
	if len(c.Trust.Controllers) == 0 {
		c.Trust.Controllers = DefaultTrustedControllers(c.KueueNamespace)
	}
	if c.Integrations.Action == "" {
		c.Integrations.Action = IntegrationActionDeny
	}
	if len(c.Controllers.Allowed) == 0 && c.InstallProfile == ProfileManaged {
		c.Controllers.Allowed = []ControllerRef{{Namespace: c.KueueNamespace, Name: DefaultKueueControllerName}}
	}
	for i := range c.Controllers.Allowed {
		if c.Controllers.Allowed[i].Namespace == "" {
			c.Controllers.Allowed[i].Namespace = c.KueueNamespace
		}
	}
	if c.Policies.Directory == "" {
		c.Policies.Directory = DefaultPolicyDirectory
	}
	if c.Policies.OnError == "" {
		c.Policies.OnError = OnErrorDeny
	}
	if c.Policies.DecisionCacheSize == nil {
		c.Policies.DecisionCacheSize = ptr.To[int32](DefaultDecisionCacheSize)
	}
	if c.Audit.Interval == nil {
		c.Audit.Interval = &metav1.Duration{Duration: DefaultAuditInterval}
	}
	if c.Audit.Reports == nil {
		reports := true
		c.Audit.Reports = &reports
	}
	if c.Audit.MaxObjects == 0 {
		c.Audit.MaxObjects = DefaultAuditMaxObjects
	}
	if c.Audit.MaxResultsPerReport == 0 {
		c.Audit.MaxResultsPerReport = DefaultAuditMaxResultsPerReport
	}
}

// kubeControllerIdentities are kube-controller-manager's identities: its own user (without
// --use-service-account-credentials) and the service accounts of the controllers that create or
// update workloads' parts (with it, the usual setting).
var kubeControllerIdentities = []string{
	"system:kube-controller-manager",
	"system:serviceaccount:kube-system:job-controller",
	"system:serviceaccount:kube-system:cronjob-controller",
	"system:serviceaccount:kube-system:replicaset-controller",
	"system:serviceaccount:kube-system:deployment-controller",
	"system:serviceaccount:kube-system:statefulset-controller",
	"system:serviceaccount:kube-system:daemon-set-controller",
	"system:serviceaccount:kube-system:replication-controller",
	"system:serviceaccount:kube-system:generic-garbage-collector",
}

// operatorIdentities are the framework operators' service accounts in the namespaces and names their
// own charts and manifests install them with. Installs that use other names override
// trust.controllers.
var operatorIdentities = []string{
	"system:serviceaccount:jobset-system:jobset-controller-manager",
	"system:serviceaccount:ray-system:kuberay-operator",
	"system:serviceaccount:mpi-operator:mpi-operator",
	"system:serviceaccount:kubeflow:training-operator",
	"system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager",
	"system:serviceaccount:appwrapper-system:appwrapper-controller-manager",
	"system:serviceaccount:lws-system:lws-controller-manager",
	"system:serviceaccount:spark-operator:spark-operator-controller",
}

// DefaultTrustedControllers is trust.controllers when the file sets none: kube-controller-manager's
// controllers, the framework operators, and Kueue's own service account in kueueNamespace (last, as
// the Helm chart appends it to its list).
func DefaultTrustedControllers(kueueNamespace string) []string {
	out := append(append([]string(nil), kubeControllerIdentities...), operatorIdentities...)
	return append(out, KueueServiceAccount(kueueNamespace))
}

// KueueServiceAccount is the username of Kueue's controller manager installed in namespace.
func KueueServiceAccount(namespace string) string {
	return "system:serviceaccount:" + namespace + ":" + DefaultKueueControllerName
}
