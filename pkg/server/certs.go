package server

import (
	"errors"
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// addCertRotator makes the server its own certificate authority, as Kueue does
// without cert-manager: cert-controller writes a CA and a serving certificate for
// the webhook Service into a Secret, keeps the CA injected in both webhook
// configurations, and rotates them before expiry. Every replica runs it; the
// Secret is the shared state, so no leader election is needed.
func addCertRotator(mgr manager.Manager, o Options, ready chan struct{}) error {
	switch {
	case o.Namespace == "":
		return errors.New("--manage-certs needs the server's namespace (--namespace or $POD_NAMESPACE)")
	case o.CertSecretName == "" || o.WebhookServiceName == "":
		return errors.New("--manage-certs needs --cert-secret-name and --webhook-service-name")
	}
	svc := o.WebhookServiceName
	var hooks []rotator.WebhookInfo
	if o.MutatingConfigurationName != "" {
		hooks = append(hooks, rotator.WebhookInfo{Name: o.MutatingConfigurationName, Type: rotator.Mutating})
	}
	if o.ValidatingConfigurationName != "" {
		hooks = append(hooks, rotator.WebhookInfo{Name: o.ValidatingConfigurationName, Type: rotator.Validating})
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: o.Namespace, Name: o.CertSecretName},
		CertDir:        o.CertDir,
		CAName:         "kueue-guard-ca",
		CAOrganization: "kueue-guard",
		DNSName:        fmt.Sprintf("%s.%s.svc", svc, o.Namespace),
		ExtraDNSNames: []string{svc, fmt.Sprintf("%s.%s", svc, o.Namespace),
			fmt.Sprintf("%s.%s.svc.cluster.local", svc, o.Namespace)},
		IsReady:               ready,
		Webhooks:              hooks,
		RequireLeaderElection: false,
		FieldOwner:            "kueue-guard",
	})
	if err != nil {
		return fmt.Errorf("setting up certificate rotation: %w", err)
	}
	return nil
}
