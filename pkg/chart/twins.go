package chart

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// TwinInputs are what the API server's twins' parameters are computed from:
// the chart computes them from its values (templates/admission-policies.yaml),
// `kueue-guard policy admission` from a configuration file, and a test holds
// the two to the same policies.
type TwinInputs struct {
	// Config is kueue-guard's configuration.
	Config *config.Configuration
	// FullName prefixes the policies' names (the release's full name).
	FullName string
	// Namespace is kueue-guard's own; the workload webhooks skip it.
	Namespace string
	// ExcludeNamespaces are more namespaces the workload webhooks skip.
	ExcludeNamespaces []string
	// ExternalFrameworks are Kueue's integrations.externalFrameworks.
	ExternalFrameworks []string
	// MaxDeletionGraceSeconds bounds a pod DELETE's grace period.
	MaxDeletionGraceSeconds int
	// Mutating adds the MutatingAdmissionPolicies (Kubernetes 1.36 and later).
	Mutating bool
}

// twinParams are the parameters as CEL, as the chart computes them.
func twinParams(in TwinInputs) map[string]string {
	c := in.Config
	list := func(items []string) string {
		b, _ := json.Marshal(items) // a CEL list literal of strings, as the chart's toJson
		return string(b)
	}
	allowed := []string{c.KueueNamespace}
	for _, a := range c.Controllers.Allowed {
		ns := a.Namespace
		if ns == "" {
			ns = c.KueueNamespace
		}
		allowed = append(allowed, ns)
	}
	exempt := append([]string{metav1.NamespaceSystem, in.Namespace, c.KueueNamespace}, in.ExcludeNamespaces...)
	exempt = append(exempt, c.ExemptNamespaces...)
	params := map[string]string{
		admission.KueueNamespacesParam:    list(uniq(allowed)),
		admission.ExemptNamespacesParam:   list(uniq(exempt)),
		admission.MaxDeletionGraceParam:   strconv.Itoa(in.MaxDeletionGraceSeconds),
		admission.TrustedRequesterParam:   trust.New(c.Trust.Controllers).CEL(),
		admission.ExternalFrameworksParam: list(orEmpty(in.ExternalFrameworks)),
		admission.AnnotationDefaultsParam: strconv.FormatBool(c.Defaulting.MissingLocalQueue != config.MissingLocalQueueIgnore),
		admission.BackstopDeniesParam:     strconv.FormatBool(c.Defaulting.Backstop == config.BackstopDeny),
		admission.InstallProfileParam:     "'" + string(c.InstallProfile) + "'",
		admission.EnabledFrameworksParam:  list(orEmpty(c.Integrations.Frameworks)),
		admission.IntegrationsActionParam: string(admissionregistrationv1.Deny),
	}
	if c.Integrations.Action == config.IntegrationActionWarn {
		params[admission.IntegrationsActionParam] = string(admissionregistrationv1.Warn)
	}
	return params
}

// RenderTwins builds the twins' policies and bindings with their parameters
// filled in, as the chart renders them with every twin enabled.
func RenderTwins(in TwinInputs) ([]client.Object, error) {
	params := twinParams(in)
	fill := func(name string, vars []admissionregistrationv1.Variable, want map[string]string) error {
		for i, v := range vars {
			for p, placeholder := range want {
				if v.Expression == placeholder {
					value, ok := params[p]
					if !ok {
						return fmt.Errorf("admission policy %s: no parameter %s", name, p)
					}
					vars[i].Expression = value
				}
			}
		}
		return nil
	}
	var out []client.Object
	for _, g := range AdmissionPolicies() {
		name := in.FullName + "-" + g.Name
		spec := *g.Spec.DeepCopy()
		if err := fill(name, spec.Variables, g.Params); err != nil {
			return nil, err
		}
		action := admissionregistrationv1.Deny
		if g.Action != "" {
			action = admissionregistrationv1.ValidationAction(params[g.Action])
		}
		out = append(out,
			&admissionregistrationv1.ValidatingAdmissionPolicy{TypeMeta: typeMeta("ValidatingAdmissionPolicy"), ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"kueue-guard.io/rule": g.Rule}}, Spec: spec},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{TypeMeta: typeMeta("ValidatingAdmissionPolicyBinding"),
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
					ValidationActions: []admissionregistrationv1.ValidationAction{action}}})
	}
	if !in.Mutating {
		return out, nil
	}
	for _, g := range MutatingPolicies() {
		name := in.FullName + "-" + g.Name
		spec := *g.Spec.DeepCopy()
		if err := fill(name, spec.Variables, g.Params); err != nil {
			return nil, err
		}
		out = append(out,
			&admissionregistrationv1.MutatingAdmissionPolicy{TypeMeta: typeMeta("MutatingAdmissionPolicy"), ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"kueue-guard.io/step": g.Step}}, Spec: spec},
			&admissionregistrationv1.MutatingAdmissionPolicyBinding{TypeMeta: typeMeta("MutatingAdmissionPolicyBinding"),
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name}})
	}
	return out, nil
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: kind}
}

func uniq(items []string) []string {
	var out []string
	for _, s := range items {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func orEmpty(items []string) []string {
	if items == nil {
		return []string{}
	}
	return items
}
