package review

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// request builds the CREATE request the API server would send for a manifest.
func (r *reviewer) request(m *Manifest) (*admission.Request, error) {
	obj := m.Object.DeepCopy()
	gvk := obj.GroupVersionKind()
	if obj.GetNamespace() == "" && isNamespaced(gvk.GroupKind()) {
		// The API server puts the request's namespace into the object.
		obj.SetNamespace(r.ns)
	}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding the object: %w", err)
	}
	return &admission.Request{
		Operation: admissionv1.Create,
		Kind:      gvk,
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		UserInfo:  r.user,
		Object:    obj,
		Raw:       raw,
		Size:      len(raw),
	}, nil
}

// isNamespaced reports kinds the reviewer knows to be namespaced: every catalog
// kind, the controller guard's kinds, LocalQueues and ConfigMaps. Other kinds keep
// the namespace they have: a cluster-scoped object must not get one.
func isNamespaced(gk schema.GroupKind) bool {
	if _, ok := integrations.Lookup(gk); ok {
		return true
	}
	if controllerKinds[gk] && !admission.IsWebhookConfiguration(gk) {
		return true
	}
	return gk == schema.GroupKind{Group: kueueGroup, Kind: "LocalQueue"} || gk == schema.GroupKind{Kind: "ConfigMap"}
}

// configurationKind is kueue-guard's configuration file, often kept beside the
// manifests (examples/): the review names it rather than calling it unknown.
var configurationKind = schema.GroupKind{Group: strings.Split(config.GroupVersion, "/")[0], Kind: config.Kind}

// controllerKinds are the kinds the controller guard judges: those it is
// registered for in a cluster, and webhook configurations, which a cluster
// judges with the chart's ValidatingAdmissionPolicy and the review offline.
var controllerKinds = func() map[schema.GroupKind]bool {
	m := map[schema.GroupKind]bool{}
	for _, k := range admission.ControllerKinds() {
		m[k.GVK.GroupKind()] = true
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		m[schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: kind}] = true
	}
	return m
}()
