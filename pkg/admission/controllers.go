package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

const (
	controllerGuardName     = "controller-guard"
	kueueWebhookSingletonID = RuleNamespace + ".kueue_webhook_singleton"
)

// The controller guard's rules.
var (
	RuleKueueSingleton = Register(Rule{
		ID:          RuleNamespace + ".kueue_singleton",
		Title:       "One Kueue controller manager",
		Doc:         "An object that would run a second Kueue controller manager is denied: Kueue is a cluster singleton.",
		Enforcement: EnforcementDeny,
		Check:       controllerGuardName,
		WebhookOnly: "it recognises a Kueue controller manager by its image, arguments and chart (parsed in Go), and the " +
			"running one (the informer cache); it guards against an admin's mistake, and its webhook fails open by default",
	})
	RuleKueueWebhookSingleton = Register(Rule{
		ID:    kueueWebhookSingletonID,
		Title: "One set of Kueue webhooks",
		Doc: "A webhook configuration registering Kueue's webhooks for a service outside the allowed Kueue " +
			"controller's namespace is denied. The API server never sends webhook configurations to admission " +
			"webhooks, so the chart installs this rule's CEL twin as a ValidatingAdmissionPolicy, and the reviewer checks it offline.",
		Enforcement: EnforcementDeny,
		Check:       controllerGuardName,
		CEL:         kueueWebhookSingletonCEL(),
	})
)

// KueueNamespacesParam is the CEL twin's parameter the chart fills with the
// namespaces Kueue may run in (kueueNamespace and controllers.allowed), as a
// CEL list literal.
const KueueNamespacesParam = "allowedNamespaces"

// kueueWebhookSingletonCEL is RuleKueueWebhookSingleton as the API server
// evaluates it: the same marker in the service path, the same allowed
// namespaces.
func kueueWebhookSingletonCEL() *CELTwin {
	fail := admissionregistrationv1.Fail
	return &CELTwin{
		Name:      "kueue-webhooks",
		ValuesKey: "kueueWebhookPolicy",
		Params:    []string{KueueNamespacesParam},
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"admissionregistration.k8s.io"}, APIVersions: []string{"v1"},
					Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}},
			}}}},
		Variables: []admissionregistrationv1.Variable{
			{Name: KueueNamespacesParam, Expression: ParamPlaceholder(KueueNamespacesParam)},
			{Name: "strays", Expression: `has(object.webhooks) ? object.webhooks.filter(w, ` +
				`has(w.clientConfig.service) && has(w.clientConfig.service.path) && ` +
				`w.clientConfig.service.path.contains("` + kueueWebhookPathMarker + `") && ` +
				`!(w.clientConfig.service.namespace in variables.` + KueueNamespacesParam + `)) : []`},
		},
		Validations: []admissionregistrationv1.Validation{{
			Expression: "size(variables.strays) == 0",
			Reason:     ptr.To(metav1.StatusReasonInvalid),
			MessageExpression: `"[` + kueueWebhookSingletonID + `] registers Kueue's webhook " + variables.strays[0].name + ` +
				`" for service " + variables.strays[0].clientConfig.service.namespace + "/" + ` +
				`variables.strays[0].clientConfig.service.name + ", but Kueue runs in " + ` +
				`variables.` + KueueNamespacesParam + `.join(", ") + " and is a cluster singleton: a second install's" + ` +
				`" webhooks would conflict; uninstall the other Kueue first, then re-apply"`,
		}},
		FailurePolicy: &fail,
	}
}

// kueueWebhookPathMarker appears in the service path of every webhook Kueue
// registers for its own API (…/mutate-kueue-x-k8s-io-v1beta2-clusterqueue), whatever
// the install calls its configurations or service.
const kueueWebhookPathMarker = "-kueue-x-k8s-io-"

var webhookConfigurationKinds = map[schema.GroupKind]bool{
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
}

// ControllerKind is a kind that can run a Kueue controller manager, with the
// resource its admission rule names.
type ControllerKind struct {
	GVK      schema.GroupVersionKind
	Resource string
	// SubResources are the subresources whose writes can add a container,
	// judged too: a Pod's ephemeralcontainers (kubectl debug).
	SubResources []string
}

// controllerKinds is the one list of what the controller guard judges in the
// cluster; the webhook's rules (and so the chart) and the reviewer read it.
var controllerKinds = []ControllerKind{
	{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Resource: "deployments"},
	{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, Resource: "statefulsets"},
	{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, Resource: "daemonsets"},
	{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, Resource: "replicasets"},
	{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: "pods", SubResources: []string{"ephemeralcontainers"}},
}

// isControllerSubResource reports whether a subresource write can add a
// container to a kind the controller guard judges.
func isControllerSubResource(gvk schema.GroupVersionKind, sub string) bool {
	for _, k := range controllerKinds {
		if k.GVK.GroupKind() == gvk.GroupKind() && slices.Contains(k.SubResources, sub) {
			return true
		}
	}
	return false
}

// ControllerKinds returns the kinds the controller guard judges in the cluster.
// Callers must not modify the result.
func ControllerKinds() []ControllerKind { return controllerKinds }

// IsWebhookConfiguration reports the webhook configuration kinds, which the
// controller guard judges too, but which the API server never sends to admission
// webhooks: in a cluster the chart's ValidatingAdmissionPolicy judges them.
func IsWebhookConfiguration(gk schema.GroupKind) bool { return webhookConfigurationKinds[gk] }

// ControllerGuard keeps Kueue a cluster singleton: it denies a workload that runs a
// second Kueue controller manager, and webhook configurations that would register
// Kueue's webhooks for a second install.
type ControllerGuard struct {
	profile config.InstallProfile
	allowed []cluster.ControllerRef
}

var _ Step = (*ControllerGuard)(nil)

// NewControllerGuard builds the guard. Configured controllers are the allowed
// identities; with none (the oss default), the controller already running wins.
func NewControllerGuard(cfg *config.Configuration) *ControllerGuard {
	g := &ControllerGuard{profile: cfg.InstallProfile}
	for _, r := range cfg.Controllers.Allowed {
		g.allowed = append(g.allowed, cluster.ControllerRef{Kind: "Deployment", Namespace: r.Namespace, Name: r.Name})
	}
	return g
}

// Name implements Step.
func (*ControllerGuard) Name() string { return controllerGuardName }

// owners are the controllers allowed to run, and whether they were configured.
func (g *ControllerGuard) owners(view cluster.View) ([]cluster.ControllerRef, bool) {
	if len(g.allowed) > 0 {
		return g.allowed, true
	}
	running := view.KueueControllers()
	if len(running) == 0 {
		return nil, false
	}
	return running[:1], false // first one wins
}

// Handles implements Step.
func (*ControllerGuard) Handles(op admissionv1.Operation) bool { return createOrUpdate(op) }

// Validate implements ValidationStep.
func (g *ControllerGuard) Validate(_ context.Context, req *Request, _ Target, view cluster.View, d *Decision) error {
	if webhookConfigurationKinds[req.Kind.GroupKind()] {
		g.admitWebhooks(req, view, d)
		return nil
	}
	m, ok := kueuecontroller.Detect(req.Object)
	if !ok {
		return nil
	}
	owners, configured := g.owners(view)
	if len(owners) == 0 {
		return nil // the first Kueue controller in the cluster
	}
	id := kueuecontroller.IdentityOf(req.Object)
	for _, o := range owners {
		if o.Namespace == id.Namespace && o.Name == id.Name {
			return nil // the allowed controller's own rollouts, ReplicaSets and Pods
		}
	}
	d.Deny(RuleKueueSingleton, matchField(req.Object, m), g.singletonMessage(id.String(), owners, configured, m))
	return nil
}

func (g *ControllerGuard) singletonMessage(what string, owners []cluster.ControllerRef, configured bool, m *kueuecontroller.Match) string {
	owner := describeOwners(owners)
	var who string
	switch {
	case g.profile == config.ProfileManaged:
		who = fmt.Sprintf("the managed Kueue install (%s) owns this cluster and is a cluster singleton", owner)
	case configured:
		who = fmt.Sprintf("only %s may run Kueue here (controllers.allowed)", owner)
	default:
		who = fmt.Sprintf("%s already runs Kueue in this cluster and Kueue is a cluster singleton", owner)
	}
	return fmt.Sprintf("%s would run a second Kueue controller manager (%s): %s; uninstall the other Kueue first "+
		"(e.g. helm uninstall), then re-apply", what, strings.Join(m.Reasons, ", "), who)
}

func describeOwners(owners []cluster.ControllerRef) string {
	parts := make([]string, len(owners))
	for i, o := range owners {
		parts[i] = o.String()
	}
	return strings.Join(parts, " or ")
}

// matchField points at the container that matched, else at the labels.
func matchField(obj *unstructured.Unstructured, m *kueuecontroller.Match) *field.Path {
	if m.Container == "" {
		return field.NewPath("metadata", "labels")
	}
	podSpec := []string{"spec", "template", "spec"}
	if obj.GetKind() == "Pod" {
		podSpec = []string{"spec"}
	}
	base := field.NewPath(podSpec[0], podSpec[1:]...)
	for _, key := range workload.ContainerLists {
		list, _, _ := unstructured.NestedSlice(obj.Object, append(podSpec, key)...)
		for i, c := range list {
			if cm, ok := c.(map[string]any); ok && cm["name"] == m.Container {
				return base.Child(key).Index(i).Child("image")
			}
		}
	}
	return base.Child("containers")
}

// admitWebhooks denies a webhook configuration that points Kueue's own webhooks at
// a service outside the allowed controller's namespace.
func (g *ControllerGuard) admitWebhooks(req *Request, view cluster.View, d *Decision) {
	owners, _ := g.owners(view)
	if len(owners) == 0 {
		return
	}
	allowedNS := map[string]bool{}
	for _, o := range owners {
		allowedNS[o.Namespace] = true
	}
	hooks, _, _ := unstructured.NestedSlice(req.Object.Object, "webhooks")
	for i, h := range hooks {
		hm, ok := h.(map[string]any)
		if !ok {
			continue
		}
		svc, ok, _ := unstructured.NestedMap(hm, "clientConfig", "service")
		if !ok {
			continue
		}
		path, _ := svc["path"].(string)
		ns, _ := svc["namespace"].(string)
		if !strings.Contains(path, kueueWebhookPathMarker) || allowedNS[ns] {
			continue
		}
		name, _ := hm["name"].(string)
		svcName, _ := svc["name"].(string)
		d.Deny(RuleKueueWebhookSingleton,
			field.NewPath("webhooks").Index(i).Child("clientConfig", "service", "namespace"),
			fmt.Sprintf("registers Kueue's webhook %q for service %s/%s, but Kueue runs as %s and is a cluster singleton: "+
				"a second install's webhooks would conflict; uninstall the other Kueue first, then re-apply",
				name, ns, svcName, describeOwners(owners)))
	}
}
