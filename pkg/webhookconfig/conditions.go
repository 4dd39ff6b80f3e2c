package webhookconfig

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// Match conditions are CEL expressions the API server evaluates before calling a
// webhook. They keep requests the server would pass untouched from ever leaving
// the API server, which matters most when the webhook is down and its failure
// policy is Fail: then only the requests it really judges wait on it.
//
// Every field an expression reads is guarded with has(), so that an expression
// never errors (an error would count as a webhook failure).

// TrustedPlaceholder stands for the trusted-requester expression in the match
// conditions the chart generator writes; the chart replaces it with the
// expression rendered from its trust.controllers values (and a chart test checks
// that the result equals TopLevelCondition for the same list).
const TrustedPlaceholder = "__TRUSTED_REQUESTER__"

// TopLevelCondition passes every request but a trusted controller's part of
// another workload (a Job's pods created by the Job controller, a JobSet's Jobs
// created by the JobSet operator). It is the CEL twin of the pipeline's own rule,
// and both are built by package trust: an owner reference alone never keeps a
// request from the webhooks. trusted is trust.Matcher.CEL() or
// TrustedPlaceholder.
func TopLevelCondition(trusted string) admissionregistrationv1.MatchCondition {
	return admissionregistrationv1.MatchCondition{Name: "top-level-workload", Expression: trust.TopLevelCEL(trusted)}
}

// MayRunKueueCondition passes only objects that could run a Kueue controller
// manager by the controller guard's fingerprint: Kueue's chart labels
// (app.kubernetes.io/name=kueue, helm.sh/chart=kueue-…) or pod template
// annotation, a container (init and ephemeral ones included) whose image
// mentions kueue, or one with a port named visibility (Kueue's visibility API).
// Every other Pod and Deployment in the cluster (kube-system's included) never
// waits on kueue-guard. kueuecontroller.MayRunKueue is its Go twin.
func MayRunKueueCondition() admissionregistrationv1.MatchCondition {
	labelled := func(meta string) string {
		return fmt.Sprintf("(has(%[1]s.labels) && (('app.kubernetes.io/name' in %[1]s.labels && "+
			"%[1]s.labels['app.kubernetes.io/name'] == 'kueue') || ('helm.sh/chart' in %[1]s.labels && "+
			"%[1]s.labels['helm.sh/chart'].startsWith('kueue-'))))", meta)
	}
	annotated := func(meta string) string {
		return fmt.Sprintf("(has(%[1]s.annotations) && 'charts.kueue.x-k8s.io/config-checksum' in %[1]s.annotations)", meta)
	}
	suspect := "(has(c.image) && c.image.contains('kueue')) || " +
		"(has(c.ports) && c.ports.exists(p, has(p.name) && p.name == 'visibility'))"
	containers := func(spec string, lists ...string) string {
		var terms []string
		for _, l := range lists {
			terms = append(terms, fmt.Sprintf("(has(%[1]s.%[2]s) && %[1]s.%[2]s.exists(c, %[3]s))", spec, l, suspect))
		}
		return "(" + strings.Join(terms, " || ") + ")"
	}
	return admissionregistrationv1.MatchCondition{
		Name: "may-run-kueue",
		Expression: labelled("object.metadata") + " || (request.kind.kind == 'Pod' ? " +
			containers("object.spec", "containers", "initContainers", "ephemeralContainers") +
			" : (" + labelled("object.spec.template.metadata") + " || " + annotated("object.spec.template.metadata") + " || " +
			containers("object.spec.template.spec", "containers", "initContainers") + "))",
	}
}
