package preflight

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	"github.com/kueue-guard/kueue-guard/pkg/kueueorder"
	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
)

// exportFirst is the step before any uninstall: uninstalling Kueue deletes
// its CRDs and with them every queue.
const exportFirst = "kueue-guard kueue export --output-dir kueue-backup/ (uninstalling Kueue deletes every queue), then "

func errorCheck(c Check, what string, err error) Check {
	c.Status = Error
	c.Summary = fmt.Sprintf("could not read %s: %s", what, strings.ReplaceAll(err.Error(), "\n", "; "))
	if apierrors.IsForbidden(err) {
		c.Summary += " (preflight needs read access to the whole cluster: see " + DocPage + "#what-preflight-reads)"
	}
	return c
}

func checkKubernetesVersion(t Target, s *State) Check {
	minimum := MinKubernetes[t]
	c := Check{ID: CheckKubernetesVersion, Title: "Kubernetes version",
		Why: fmt.Sprintf("The managed extension installs only on Kubernetes %s or later.", MinKubernetes[TargetManaged])}
	if t == TargetOSS {
		c.Why = fmt.Sprintf("Kueue v0.19 requires Kubernetes %s or newer: its controllers use APIs older API servers do not serve.", minimum)
	}
	if s.VersionErr != nil {
		return errorCheck(c, "the API server's version", s.VersionErr)
	}
	v, err := version.ParseGeneric(s.Version)
	if err != nil {
		c.Status = Error
		c.Summary = fmt.Sprintf("the API server reports version %q, which is not a Kubernetes version: %v", s.Version, err)
		return c
	}
	if v.LessThan(minimum) {
		c.add(Finding{Status: Fail, Object: "Kubernetes " + s.Version,
			Message: fmt.Sprintf("%s needs Kubernetes %s or later", t.describe(), minimum),
			Fix:     fmt.Sprintf("upgrade the control plane to %s or later first (on AKS: az aks upgrade --kubernetes-version)", minimum)})
		c.Summary = fmt.Sprintf("Kubernetes %s is older than %s, %s's minimum", s.Version, minimum, t.describe())
		return c
	}
	c.Status = Pass
	c.Summary = fmt.Sprintf("Kubernetes %s; %s needs %s or later", s.Version, t.describe(), minimum)
	return c
}

// managedInstall reports whether a manager is the managed install
// kueue-guard is configured for: named in controllers.allowed of a
// configuration under installProfile managed.
func managedInstall(m *Manager, guards []GuardConfig) bool {
	for _, g := range guards {
		if g.Config == nil || g.Config.InstallProfile != config.ProfileManaged {
			continue
		}
		for _, a := range g.Config.Controllers.Allowed {
			if m.Identity.Kind == "Deployment" && a.Namespace == m.Identity.Namespace && a.Name == m.Identity.Name {
				return true
			}
		}
	}
	return false
}

func checkKueueControllers(t Target, s *State) Check {
	c := Check{ID: CheckKueueControllers, Title: "Kueue controller managers",
		Why: "Kueue is a cluster singleton: two controller managers fight over the same queues and webhooks. " +
			"The managed install refuses to install next to an unmanaged Kueue controller, even in another namespace."}
	if s.ManagersErr != nil {
		return errorCheck(c, "the workloads that could run Kueue", s.ManagersErr)
	}
	var others []*Manager
	for i := range s.Managers {
		m := &s.Managers[i]
		if t == TargetManaged && managedInstall(m, s.Guards) {
			c.add(Finding{Status: Pass, Object: m.Identity.String(),
				Message: "the managed install kueue-guard is configured for (controllers.allowed under installProfile managed)"})
			continue
		}
		others = append(others, m)
	}
	switch {
	case t == TargetManaged:
		for _, m := range others {
			c.add(Finding{Status: Fail, Object: m.Identity.String(),
				Message: fmt.Sprintf("runs a Kueue controller manager (%s): the managed install refuses to install next to it",
					strings.Join(m.Reasons, ", ")),
				Fix: exportFirst + uninstallCommand(m)})
		}
	case len(others) > 1:
		for _, m := range others {
			c.add(Finding{Status: Fail, Object: m.Identity.String(),
				Message: fmt.Sprintf("runs a Kueue controller manager (%s), one of %d in this cluster", strings.Join(m.Reasons, ", "), len(others)),
				Fix:     "keep one Kueue: " + exportFirst + uninstallCommand(m)})
		}
	default:
		for _, m := range others {
			c.add(Finding{Status: Pass, Object: m.Identity.String(),
				Message: fmt.Sprintf("runs a Kueue controller manager (%s): upgrade it in place rather than install a second", strings.Join(m.Reasons, ", "))})
		}
	}
	if c.Status == "" {
		c.Status = Pass
	}
	switch {
	case len(s.Managers) == 0:
		c.Summary = "no Kueue controller manager runs in any namespace"
	case c.Status == Fail && t == TargetManaged:
		c.Summary = fmt.Sprintf("%d Kueue controller manager(s) must be uninstalled before the managed install", len(others))
	case c.Status == Fail:
		c.Summary = fmt.Sprintf("%d Kueue controller managers run; Kueue is a cluster singleton", len(others))
	default:
		c.Summary = fmt.Sprintf("%d Kueue controller manager(s), none in the way", len(s.Managers))
	}
	return c
}

// releaseTag is a release version in an image tag: Kueue's release
// manifests are published under it.
var releaseTag = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// uninstallCommand is how the manager was installed, undone: its Helm
// release, Kueue's release manifests, or the object itself.
func uninstallCommand(m *Manager) string {
	if r := m.HelmRelease(); r != "" {
		return fmt.Sprintf("helm uninstall %s --namespace %s", r, m.HelmNamespace())
	}
	if tag := kueuecontroller.ImageTag(m.Image); m.Labels["control-plane"] == "controller-manager" && releaseTag.MatchString(tag) {
		return fmt.Sprintf("kubectl delete -f https://github.com/kubernetes-sigs/kueue/releases/download/%s/manifests.yaml", tag)
	}
	return fmt.Sprintf("kubectl delete %s %s --namespace %s, and Kueue's webhook configurations, CRDs and RBAC with it",
		strings.ToLower(m.Identity.Kind), m.Identity.Name, m.Identity.Namespace)
}

func checkUnsupportedWorkloads(t Target, s *State) Check {
	c := Check{ID: CheckUnsupportedWorkloads, Title: "Queued workloads the target does not manage"}
	if t == TargetManaged {
		c.Why = "The managed install supports Job, CronJob, Pod, Deployment, StatefulSet, JobSet, Ray, MPIJob and TrainJob; " +
			"Legacy Kubeflow v1 jobs, AppWrapper, LeaderWorkerSet and SparkApplication stop being managed by Kueue after the switch."
	} else {
		c.Why = "Upstream Kueue manages a kind only when its Configuration lists the framework (integrations.frameworks)."
	}
	if s.WorkloadsErr != nil {
		return errorCheck(c, "the queued workloads", s.WorkloadsErr)
	}
	for _, w := range s.Workloads {
		f := Finding{Status: Fail, Object: fmt.Sprintf("%s %s/%s", w.Integration.Key(), w.Namespace, w.Name)}
		how := fmt.Sprintf("queue %q", w.Queue)
		if w.Workload != "" {
			how = fmt.Sprintf("managed by Kueue through Workload %s, queue %q", w.Workload, w.Queue)
		}
		if t == TargetManaged {
			f.Message = fmt.Sprintf("%s: the managed install does not support %s, so Kueue stops managing it", how, w.Integration.Key())
			f.Fix = fmt.Sprintf("rewrite it as %s before the switch, or keep the OSS install", w.Integration.Alternative)
		} else {
			f.Message = fmt.Sprintf("%s: no Kueue Configuration found enables framework %s, so Kueue does not manage it", how, w.Integration.EffectiveFramework())
			f.Fix = fmt.Sprintf("add %s to integrations.frameworks of the new install's Configuration", w.Integration.EffectiveFramework())
		}
		c.add(f)
	}
	if len(s.Workloads) > 0 {
		c.Summary = fmt.Sprintf("%d queued workload(s) of integrations %s does not manage", len(s.Workloads), t.describe())
		return c
	}
	c.Status = Pass
	switch {
	case len(s.Listed) == 0 && t == TargetOSS:
		c.Summary = "no Kueue Configuration found to compare the queued workloads with; upstream Kueue supports every integration once its Configuration lists it"
	case len(s.Listed) == 0:
		c.Summary = "the cluster serves none of the kinds " + t.describe() + " does not support"
	default:
		c.Summary = fmt.Sprintf("no queued %s", strings.Join(s.Listed, ", "))
	}
	return c
}

func checkKueueConfiguration(t Target, s *State) Check {
	c := Check{ID: CheckKueueConfiguration, Title: "Kueue Configuration settings the target does not carry",
		Why: "The managed install runs its own Configuration: integrations beyond its set, external frameworks, feature gates " +
			"and manageJobsWithoutQueueName set on the OSS install are not carried over. Upstream Kueue keeps whatever its " +
			"Configuration says."}
	if s.ManagersErr != nil {
		return errorCheck(c, "the Kueue controller managers", s.ManagersErr)
	}
	read := 0
	for _, kc := range s.KueueConfigs {
		m := managerOf(s, kc.Manager)
		if t == TargetManaged && m != nil && managedInstall(m, s.Guards) {
			continue
		}
		switch {
		case kc.Err != nil:
			c.add(Finding{Status: Error, Object: kc.Manager.String(), Message: kc.Err.Error()})
			continue
		case kc.NotFound:
			c.add(Finding{Status: Warn, Object: kc.Manager.String(),
				Message: "mounts no ConfigMap holding Kueue's " + "controller_manager_config.yaml: its settings could not be compared",
				Fix:     "compare its Configuration with the target's by hand"})
			continue
		}
		read++
		if t == TargetOSS {
			c.add(Finding{Status: Pass, Object: "ConfigMap " + kc.Source,
				Message: fmt.Sprintf("carried as is by an upstream install: frameworks %s", strings.Join(kc.Frameworks, ", ")),
				Fix:     "kueue-guard kueue export under installProfile oss saves it with the queues (00-kueue-configuration.yaml)"})
			continue
		}
		for _, fw := range kc.Frameworks {
			if in, ok := integrations.LookupFramework(fw); !ok || !in.Managed {
				c.add(Finding{Status: Warn, Object: "ConfigMap " + kc.Source,
					Message: fmt.Sprintf("integrations.frameworks enables %s, which the managed install does not support", fw),
					Fix:     alternativeFix(in)})
			}
		}
		for _, fw := range kc.External {
			c.add(Finding{Status: Warn, Object: "ConfigMap " + kc.Source,
				Message: fmt.Sprintf("integrations.externalFrameworks enables %s, which the managed install does not carry", fw),
				Fix:     "check that the managed install supports it before moving its workloads"})
		}
		for _, gate := range sortedGates(kc.FeatureGates) {
			c.add(Finding{Status: Warn, Object: "ConfigMap " + kc.Source,
				Message: fmt.Sprintf("feature gate %s=%t is set; the managed install runs with its own feature gates", gate, kc.FeatureGates[gate]),
				Fix:     "check the managed install's setting of " + gate + " before moving the workloads that depend on it"})
		}
		if kc.ManageJobsWithoutQueueName {
			c.add(Finding{Status: Warn, Object: "ConfigMap " + kc.Source,
				Message: "manageJobsWithoutQueueName is true: workloads without a queue label are held by this install, perhaps not by the managed one",
				Fix:     "label every workload (kueue-guard's queue defaulting does, from namespace defaults)"})
		}
	}
	if t == TargetManaged && s.TopologiesErr == nil && s.Topologies > 0 {
		c.add(Finding{Status: Warn, Object: fmt.Sprintf("%d Topology object(s)", s.Topologies),
			Message: "topology-aware scheduling (feature gate TopologyAwareScheduling) is in use",
			Fix:     "check that the managed install enables TopologyAwareScheduling; kueue-guard kueue export keeps the Topologies"})
	}
	if c.Status == "" {
		c.Status = Pass
	}
	switch {
	case len(s.KueueConfigs) == 0:
		c.Summary = "no Kueue controller manager runs, so no Configuration to carry"
	case c.Status == Pass && t == TargetOSS:
		c.Summary = fmt.Sprintf("%d Configuration(s), carried as they are", read)
	case c.Status == Pass:
		c.Summary = fmt.Sprintf("%d Configuration(s) read; every setting in use is one the managed install carries", read)
	default:
		c.Summary = fmt.Sprintf("%d setting(s) in use that %s does not carry", countStatus(c.Findings, Warn), t.describe())
	}
	return c
}

func managerOf(s *State, id kueuecontroller.Identity) *Manager {
	for i := range s.Managers {
		if s.Managers[i].Identity == id {
			return &s.Managers[i]
		}
	}
	return nil
}

func countStatus(fs []Finding, st Status) int {
	n := 0
	for _, f := range fs {
		if f.Status == st {
			n++
		}
	}
	return n
}

func alternativeFix(in *integrations.Integration) string {
	if in == nil || in.Alternative == "" {
		return "move its workloads to a supported kind first"
	}
	return "move its workloads to " + in.Alternative + " first"
}

func sortedGates(g map[string]bool) []string {
	out := make([]string, 0, len(g))
	for k := range g {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ourMutating are the configurations that serve kueue-guard's queue
// defaulting, whatever the chart named them.
func ourMutating(s *State) []string {
	var out []string
	for _, c := range s.Mutating {
		for _, w := range c.Webhooks {
			if kueueorder.WebhookPath(w.ClientConfig) == webhookconfig.MutateWorkloadsPath {
				out = append(out, c.Name)
				break
			}
		}
	}
	return out
}

func checkWebhookOrder(t Target, s *State) Check {
	c := Check{ID: CheckWebhookOrder, Title: "Webhook order between kueue-guard and Kueue",
		Why: "The API server calls mutating webhook configurations in name order. When Kueue's runs before kueue-guard's " +
			"without reinvocationPolicy IfNeeded, it sees a job before kueue-guard labels it, does not suspend it, and the " +
			"job runs outside quota."}
	if s.MutatingErr != nil {
		return errorCheck(c, "the mutating webhook configurations", s.MutatingErr)
	}
	ours := ourMutating(s)
	if len(ours) == 0 {
		c.add(Finding{Status: Warn, Message: "kueue-guard's queue defaulting webhook (" + webhookconfig.MutateWorkloadsPath + ") is not registered",
			Fix: "install kueue-guard before the switch: while Kueue is away it holds new queued workloads (kueueAbsent: suspend)"})
		c.Summary = "kueue-guard is not installed"
		return c
	}
	registered := kueueorder.Registered(s.Mutating)
	for _, name := range ours {
		for _, p := range kueueorder.Check(name, s.Mutating) {
			c.add(Finding{Status: Fail, Object: "MutatingWebhookConfiguration " + p.Configuration,
				Message: fmt.Sprintf("Kueue's webhooks %s run before kueue-guard's %s and are not re-invoked", strings.Join(p.Webhooks, ", "), name),
				Fix: fmt.Sprintf("set reinvocationPolicy: IfNeeded on them (Kueue's chart: mutatingWebhook.reinvocationPolicy), "+
					"or rename kueue-guard's configuration to sort before %q (chart value webhooks.mutatingName)", p.Configuration)})
		}
	}
	switch {
	case c.Status == Fail:
		c.Summary = "Kueue's mutating webhooks run before kueue-guard's"
	case !registered:
		c.Status = Pass
		c.Summary = fmt.Sprintf("kueue-guard's %s is registered; Kueue's mutating webhooks are not (Kueue is not serving)", strings.Join(ours, ", "))
	default:
		c.Status = Pass
		c.Summary = fmt.Sprintf("kueue-guard's %s runs before Kueue's mutating webhooks, or they are re-invoked", strings.Join(ours, ", "))
	}
	if t == TargetManaged {
		c.Summary += "; run preflight again after the switch: the managed install's configuration has its own name"
	}
	return c
}

func checkKueueGuardProfile(t Target, s *State) Check {
	c := Check{ID: CheckKueueGuardProfile, Title: "kueue-guard's installProfile",
		Why: "installProfile decides what kueue-guard guards: managed rejects the kinds the managed install does not support " +
			"and allows one known Kueue controller; oss follows the Kueue Configuration it reads. It must name the install " +
			"Kueue runs as once the switch is done."}
	if s.GuardsErr != nil {
		return errorCheck(c, "kueue-guard's configuration", s.GuardsErr)
	}
	if len(s.Guards) == 0 {
		c.add(Finding{Status: Warn, Message: "no kueue-guard configuration found (no ConfigMap labelled " + guardPartOfLabel + " holding " + guardConfigKey + ")",
			Fix: "give --config with kueue-guard's configuration file, or install kueue-guard's chart"})
		c.Summary = "kueue-guard's configuration not found"
		return c
	}
	for _, g := range s.Guards {
		if g.Err != nil {
			c.add(Finding{Status: Fail, Object: g.Source, Message: g.Err.Error(), Fix: "fix the configuration: kueue-guard serve would not start with it"})
			continue
		}
		if g.Config.InstallProfile == config.InstallProfile(t) {
			c.add(Finding{Status: Pass, Object: g.Source, Message: "installProfile " + string(t)})
			continue
		}
		upgrade := "set installProfile: " + string(t)
		if g.Release != "" {
			upgrade = fmt.Sprintf("helm upgrade %s <chart> --namespace %s --reuse-values --set config.installProfile=%s", g.Release, g.Namespace, t)
		}
		msg := fmt.Sprintf("installProfile %s: kueue-guard guards the %s install", g.Config.InstallProfile, g.Config.InstallProfile)
		if t == TargetManaged {
			msg += "; after the switch it would let through the kinds the managed install does not support, and the managed controller would be a second Kueue"
		}
		c.add(Finding{Status: Warn, Object: g.Source, Message: msg, Fix: "as part of the switch, " + upgrade})
	}
	switch c.Status {
	case Pass:
		c.Summary = "kueue-guard runs with installProfile " + string(t)
	case Warn:
		c.Summary = "kueue-guard's installProfile must change with the switch"
	default:
		c.Summary = "kueue-guard's configuration does not load"
	}
	return c
}
