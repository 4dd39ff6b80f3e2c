package config

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Field paths of the configuration file, named once so that messages and tests agree.
var (
	apiVersionPath        = field.NewPath("apiVersion")
	kindPath              = field.NewPath("kind")
	installProfilePath    = field.NewPath("installProfile")
	kueueNamespacePath    = field.NewPath("kueueNamespace")
	exemptNamespacesPath  = field.NewPath("exemptNamespaces")
	defaultingPath        = field.NewPath("defaulting")
	missingLocalQueuePath = defaultingPath.Child("missingLocalQueue")
	rulesPath             = defaultingPath.Child("rules")
	integrationsPath      = field.NewPath("integrations")
	actionPath            = integrationsPath.Child("action")
	frameworksPath        = integrationsPath.Child("frameworks")
	allowedPath           = field.NewPath("controllers", "allowed")
	policiesPath          = field.NewPath("policies")
	directoryPath         = policiesPath.Child("directory")
	onErrorPath           = policiesPath.Child("onError")
	backstopPath          = defaultingPath.Child("backstop")
	unqueuedPath          = defaultingPath.Child("unqueued")
	trustControllersPath  = field.NewPath("trust", "controllers")
)

// Messages shared by several checks.
const (
	msgFrameworksManaged = "may only be set with installProfile \"oss\"; the managed profile's integrations are fixed"
	msgSurroundingSpace  = "must not have leading or trailing whitespace"
)

// Validate reports every problem in the configuration, each with its field path, so that a user can fix
// the file in one pass. It expects SetDefaults to have run: unset enums are reported as unsupported.
func (c *Configuration) Validate() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != GroupVersion {
		errs = append(errs, field.NotSupported(apiVersionPath, c.APIVersion, []string{GroupVersion}))
	}
	if c.Kind != Kind {
		errs = append(errs, field.NotSupported(kindPath, c.Kind, []string{Kind}))
	}
	if c.InstallProfile != ProfileManaged && c.InstallProfile != ProfileOSS {
		errs = append(errs, field.NotSupported(installProfilePath, c.InstallProfile,
			[]InstallProfile{ProfileManaged, ProfileOSS}))
	}
	switch c.KueueAbsent {
	case KueueAbsentSuspend, KueueAbsentDeny, KueueAbsentAllow:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("kueueAbsent"), c.KueueAbsent,
			[]KueueAbsentAction{KueueAbsentSuspend, KueueAbsentDeny, KueueAbsentAllow}))
	}
	switch c.Simulation.Warn {
	case SimulationWarnDryRun, SimulationWarnCreate, SimulationWarnNever:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("simulation", "warn"), c.Simulation.Warn,
			[]SimulationWarn{SimulationWarnDryRun, SimulationWarnCreate, SimulationWarnNever}))
	}
	errs = append(errs, validateNamespaceName(kueueNamespacePath, c.KueueNamespace)...)
	errs = append(errs, validateExemptNamespaces(c.ExemptNamespaces)...)
	errs = append(errs, validateDefaulting(&c.Defaulting)...)
	errs = append(errs, validateIntegrations(&c.Integrations, c.InstallProfile)...)
	errs = append(errs, validateControllers(&c.Controllers)...)
	errs = append(errs, validatePolicies(&c.Policies)...)
	errs = append(errs, validateAudit(&c.Audit)...)
	errs = append(errs, validateTrust(&c.Trust)...)
	return errs
}

// GroupPrefix marks a trust.controllers entry that names a group rather than a user.
const GroupPrefix = "group:"

// validateTrust checks trust.controllers. The entries are also rendered into the webhooks' CEL match
// conditions as string literals, so quotes and backslashes are refused rather than escaped.
func validateTrust(t *Trust) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, e := range t.Controllers {
		p := trustControllersPath.Index(i)
		name := strings.TrimPrefix(e, GroupPrefix)
		switch {
		case strings.TrimSpace(e) != e:
			errs = append(errs, field.Invalid(p, e, msgSurroundingSpace))
		case strings.TrimSuffix(name, "*") == "":
			errs = append(errs, field.Required(p, "a username, a username prefix ending in *, or group:NAME"))
		case strings.ContainsAny(e, "'\\\"\n"):
			errs = append(errs, field.Invalid(p, e, "must not contain quotes, backslashes or newlines"))
		case strings.HasPrefix(e, GroupPrefix) && strings.Contains(name, "*"):
			errs = append(errs, field.Invalid(p, e, "a group is matched exactly: * is only allowed at the end of a username prefix"))
		case strings.Contains(strings.TrimSuffix(name, "*"), "*"):
			errs = append(errs, field.Invalid(p, e, "* is only allowed at the end, as a username prefix"))
		case seen.Has(e):
			errs = append(errs, field.Duplicate(p, e))
		}
		seen.Insert(e)
	}
	return errs
}

func validateExemptNamespaces(namespaces []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, ns := range namespaces {
		p := exemptNamespacesPath.Index(i)
		if seen.Has(ns) {
			errs = append(errs, field.Duplicate(p, ns))
			continue
		}
		seen.Insert(ns)
		errs = append(errs, validateNamespaceName(p, ns)...)
	}
	return errs
}

func validateDefaulting(d *Defaulting) field.ErrorList {
	var errs field.ErrorList
	switch d.MissingLocalQueue {
	case MissingLocalQueueWarn, MissingLocalQueueDeny, MissingLocalQueueIgnore:
	default:
		errs = append(errs, field.NotSupported(missingLocalQueuePath, d.MissingLocalQueue,
			[]MissingLocalQueueAction{MissingLocalQueueWarn, MissingLocalQueueDeny, MissingLocalQueueIgnore}))
	}
	if d.Backstop != BackstopDeny && d.Backstop != BackstopWarn && d.Backstop != BackstopOff {
		errs = append(errs, field.NotSupported(backstopPath, d.Backstop, []BackstopAction{BackstopDeny, BackstopWarn, BackstopOff}))
	}
	switch d.Unqueued.Action {
	case UnqueuedAllow, UnqueuedWarn, UnqueuedDeny:
	default:
		errs = append(errs, field.NotSupported(unqueuedPath.Child("action"), d.Unqueued.Action,
			[]UnqueuedAction{UnqueuedAllow, UnqueuedWarn, UnqueuedDeny}))
	}
	if d.Unqueued.NamespaceSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(d.Unqueued.NamespaceSelector); err != nil {
			errs = append(errs, field.Invalid(unqueuedPath.Child("namespaceSelector"), d.Unqueued.NamespaceSelector, err.Error()))
		}
	}
	names := sets.New[string]()
	for i := range d.Rules {
		p := rulesPath.Index(i)
		r := &d.Rules[i]
		if r.Name != "" {
			if names.Has(r.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
			}
			names.Insert(r.Name)
		}
		errs = append(errs, validateRule(p, r)...)
	}
	return errs
}

func validateRule(p *field.Path, r *DefaultingRule) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "every rule needs a name for the defaulted-by annotation"))
	} else {
		errs = append(errs, invalidIfAny(p.Child("name"), r.Name, validation.IsDNS1123Label(r.Name))...)
	}
	if r.NamespaceSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(r.NamespaceSelector); err != nil {
			errs = append(errs, field.Invalid(p.Child("namespaceSelector"), r.NamespaceSelector, err.Error()))
		}
	}
	if r.RequestsResource != "" {
		errs = append(errs, invalidIfAny(p.Child("requestsResource"), r.RequestsResource,
			validation.IsQualifiedName(r.RequestsResource))...)
	}
	if r.LocalQueue == "" {
		errs = append(errs, field.Required(p.Child("localQueue"), "the LocalQueue name to set"))
	} else {
		errs = append(errs, invalidIfAny(p.Child("localQueue"), r.LocalQueue,
			validation.IsDNS1123Subdomain(r.LocalQueue))...)
	}
	if r.PriorityClass != "" {
		errs = append(errs, invalidIfAny(p.Child("priorityClass"), r.PriorityClass,
			validation.IsDNS1123Subdomain(r.PriorityClass))...)
	}
	return errs
}

func validateIntegrations(in *Integrations, profile InstallProfile) field.ErrorList {
	var errs field.ErrorList
	if in.Action != IntegrationActionDeny && in.Action != IntegrationActionWarn {
		errs = append(errs, field.NotSupported(actionPath, in.Action,
			[]IntegrationAction{IntegrationActionDeny, IntegrationActionWarn}))
	}
	if len(in.Frameworks) > 0 && profile == ProfileManaged {
		errs = append(errs, field.Forbidden(frameworksPath, msgFrameworksManaged))
	}
	seen := sets.New[string]()
	for i, f := range in.Frameworks {
		p := frameworksPath.Index(i)
		switch {
		case strings.TrimSpace(f) == "":
			errs = append(errs, field.Required(p, "a Kueue framework name, e.g. batch/job"))
		case strings.TrimSpace(f) != f:
			errs = append(errs, field.Invalid(p, f, msgSurroundingSpace))
		case seen.Has(f):
			errs = append(errs, field.Duplicate(p, f))
		}
		seen.Insert(f)
	}
	return errs
}

func validateControllers(c *Controllers) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[ControllerRef]()
	for i, ref := range c.Allowed {
		p := allowedPath.Index(i)
		if seen.Has(ref) {
			errs = append(errs, field.Duplicate(p, ref))
			continue
		}
		seen.Insert(ref)
		errs = append(errs, validateNamespaceName(p.Child("namespace"), ref.Namespace)...)
		if ref.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "the Kueue controller Deployment name"))
		} else {
			errs = append(errs, invalidIfAny(p.Child("name"), ref.Name, validation.IsDNS1123Subdomain(ref.Name))...)
		}
	}
	return errs
}

func validatePolicies(p *Policies) field.ErrorList {
	var errs field.ErrorList
	if p.Directory == "" {
		errs = append(errs, field.Required(directoryPath, "the directory holding the Rego policies"))
	}
	if p.OnError != OnErrorDeny && p.OnError != OnErrorAllow {
		errs = append(errs, field.NotSupported(onErrorPath, p.OnError, []OnError{OnErrorDeny, OnErrorAllow}))
	}
	seen := map[string]bool{}
	for i, b := range p.AllowBuiltins {
		switch {
		case b == "":
			errs = append(errs, field.Required(policiesPath.Child("allowBuiltins").Index(i), "a built-in's name"))
		case seen[b]:
			errs = append(errs, field.Duplicate(policiesPath.Child("allowBuiltins").Index(i), b))
		}
		seen[b] = true
	}
	if n := p.DecisionCacheSize; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(policiesPath.Child("decisionCacheSize"), *n, "must be 0 (no reuse) or more"))
	}
	return errs
}

// validateNamespaceName checks a Kubernetes namespace name (a DNS-1123 label).
func validateNamespaceName(p *field.Path, ns string) field.ErrorList {
	if ns == "" {
		return field.ErrorList{field.Required(p, "a namespace name")}
	}
	return invalidIfAny(p, ns, validation.IsDNS1123Label(ns))
}

// invalidIfAny turns the messages of an apimachinery Is* check into one field error.
func invalidIfAny(p *field.Path, value string, msgs []string) field.ErrorList {
	if len(msgs) == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(p, value, strings.Join(msgs, "; "))}
}

var auditPath = field.NewPath("audit")

func validateAudit(a *Audit) field.ErrorList {
	var errs field.ErrorList
	if a.Interval != nil && a.Interval.Duration < 0 {
		errs = append(errs, field.Invalid(auditPath.Child("interval"), a.Interval.Duration.String(), "must not be negative (0s turns the audit off)"))
	}
	if a.Interval != nil && a.Interval.Duration > 0 && a.Interval.Duration < time.Second {
		errs = append(errs, field.Invalid(auditPath.Child("interval"), a.Interval.Duration.String(), "at least 1s (each run lists the whole cluster: 60s or more in production)"))
	}
	if a.MaxObjects < 0 {
		errs = append(errs, field.Invalid(auditPath.Child("maxObjects"), a.MaxObjects, "must not be negative"))
	}
	if a.MaxResultsPerReport < 0 {
		errs = append(errs, field.Invalid(auditPath.Child("maxResultsPerReport"), a.MaxResultsPerReport, "must not be negative"))
	}
	return errs
}
