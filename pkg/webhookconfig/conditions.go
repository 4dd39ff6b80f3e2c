package webhookconfig

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// Match conditions are CEL expressions the API server evaluates before calling a
// webhook. They keep requests the server would pass untouched from ever leaving
// the API server, which matters most when the webhook is down and its failure
// policy is Fail: then only the requests it really judges wait on it.
//
// Every field an expression reads is guarded with has(), so that an expression
// never errors (an error would count as a webhook failure).

// TopLevelCondition passes only top-level workloads: objects without a
// controller owner whose kind makes them part of another workload (a Job's or a
// ReplicaSet's pods, a JobSet's Jobs). It mirrors integrations.IsManagedOwner,
// which the server applies too.
func TopLevelCondition() admissionregistrationv1.MatchCondition {
	var kinds []string
	for _, gk := range integrations.ManagedOwnerKinds() {
		kinds = append(kinds, fmt.Sprintf("'%s/%s'", gk.Group, gk.Kind))
	}
	return admissionregistrationv1.MatchCondition{
		Name: "top-level-workload",
		Expression: "!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(r, " +
			"has(r.controller) && r.controller && " +
			"((r.apiVersion.contains('/') ? r.apiVersion.split('/')[0] : '') + '/' + r.kind) in [" +
			strings.Join(kinds, ", ") + "])",
	}
}

// MayRunKueueCondition passes only objects that could run a Kueue controller
// manager by the controller guard's fingerprint: Kueue's chart label, or a
// container image that mentions kueue. Every other Pod and Deployment in the
// cluster (kube-system's included) never waits on kueue-guard.
func MayRunKueueCondition() admissionregistrationv1.MatchCondition {
	labelled := func(meta string) string {
		return fmt.Sprintf("(has(%[1]s.labels) && 'app.kubernetes.io/name' in %[1]s.labels && "+
			"%[1]s.labels['app.kubernetes.io/name'] == 'kueue')", meta)
	}
	images := func(spec string) string {
		return fmt.Sprintf("(%[1]s.containers.exists(c, has(c.image) && c.image.contains('kueue')) || "+
			"(has(%[1]s.initContainers) && %[1]s.initContainers.exists(c, has(c.image) && c.image.contains('kueue'))))", spec)
	}
	return admissionregistrationv1.MatchCondition{
		Name: "may-run-kueue",
		Expression: labelled("object.metadata") + " || (request.kind.kind == 'Pod' ? " + images("object.spec") +
			" : (" + labelled("object.spec.template.metadata") + " || " + images("object.spec.template.spec") + "))",
	}
}
