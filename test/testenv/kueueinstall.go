package testenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installKueueObjects creates, from Kueue's chart, its ServiceAccount with its RBAC
// (or cluster-admin) and its manager ConfigMap.
func (e *Env) installKueueObjects(ctx context.Context, objs []*unstructured.Unstructured, opts KueueOptions) error {
	var apply []client.Object
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			apply = append(apply, o)
		case "ConfigMap":
			// kueue-manager-config: the Configuration the manager runs with, where
			// an install keeps it (kueue-guard's oss profile reads it from there).
			if o.GetName() == kueueRelease+"-manager-config" {
				apply = append(apply, o)
			}
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if !opts.ClusterAdmin {
				apply = append(apply, o)
			}
		}
	}
	if opts.ClusterAdmin {
		apply = append(apply, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "testenv-kueue-cluster-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: KueueNamespace, Name: KueueServiceAccount}},
		})
	}
	found := false
	for _, o := range apply {
		if o.GetObjectKind().GroupVersionKind().Kind == "ServiceAccount" && o.GetName() == KueueServiceAccount {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("the Kueue chart rendered no ServiceAccount %s/%s", KueueNamespace, KueueServiceAccount)
	}
	return e.applyObjects(ctx, apply...)
}

// kueueWebhooks takes Kueue's webhook configurations from the rendered chart and
// points every webhook at base+path with the CA (pointWebhooks).
func kueueWebhooks(objs []*unstructured.Unstructured, base string, ca []byte) (
	*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	mut, val, err := pointWebhooks(objs, base, ca)
	if err != nil {
		return nil, nil, err
	}
	if mut == nil || val == nil || mut.Name != KueueMutatingWebhookConfiguration || val.Name != KueueValidatingWebhookConfiguration {
		return nil, nil, errors.New("the Kueue chart did not render kueue-mutating-webhook-configuration and kueue-validating-webhook-configuration")
	}
	return mut, val, nil
}

// pointWebhooks takes the webhook configurations from rendered objects and points
// every webhook at base+path with the CA, keeping names, rules, failure policies
// and selectors as the project ships them; either is nil when none was rendered.
func pointWebhooks(objs []*unstructured.Unstructured, base string, ca []byte) (
	*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var mut *admissionregistrationv1.MutatingWebhookConfiguration
	var val *admissionregistrationv1.ValidatingWebhookConfiguration
	rewrite := func(cc *admissionregistrationv1.WebhookClientConfig) error {
		if cc.Service == nil || cc.Service.Path == nil {
			return fmt.Errorf("webhook without a service path: %+v", cc)
		}
		cc.URL = new(base + *cc.Service.Path)
		cc.Service = nil
		cc.CABundle = ca
		return nil
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			mut = &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, mut); err != nil {
				return nil, nil, err
			}
			for i := range mut.Webhooks {
				if err := rewrite(&mut.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
			// Cluster-scoped: a chart may set a namespace the API server would ignore.
			mut.Namespace = ""
		case "ValidatingWebhookConfiguration":
			val = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, val); err != nil {
				return nil, nil, err
			}
			for i := range val.Webhooks {
				if err := rewrite(&val.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
			val.Namespace = ""
		}
	}
	return mut, val, nil
}

// KueueVersion is the Kueue version hack/kueue builds the manager from.
func KueueVersion() (string, error) { return builtVersion("kueue", "sigs.k8s.io/kueue") }

// builtVersion is the version of module that hack/<dir> builds a binary from.
func builtVersion(dir, module string) (string, error) {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "hack", dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "require" {
			f = f[1:] // a one-line require
		}
		if len(f) >= 2 && f[0] == module {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("hack/%s/go.mod does not require %s", dir, module)
}

// checkKueueVersion makes sure that hack/kueue (which builds the manager) and our
// go.mod (whose Kueue CRDs Start installs) require the same Kueue.
func checkKueueVersion() error { return checkBuiltVersion("kueue", "sigs.k8s.io/kueue") }

// checkBuiltVersion makes sure that hack/<dir> builds the version of module whose
// CRDs Start installs (the one our go.mod requires).
func checkBuiltVersion(dir, module string) error {
	built, err := builtVersion(dir, module)
	if err != nil {
		return err
	}
	src, err := ModuleDir(module)
	if err != nil {
		return err
	}
	if built == "" || !strings.HasSuffix(src, "@"+built) {
		return fmt.Errorf("hack/%s/go.mod builds %s %q but the CRDs come from %s: require the same version in both", dir, module, built, src)
	}
	return nil
}

// ensureKueueMetricsCert makes sure a certificate the manager can load is in
// kueueMetricsCertDir: written once, under a lock, because suites run in parallel.
func ensureKueueMetricsCert() error {
	if err := os.MkdirAll(kueueMetricsCertDir, 0o755); err != nil {
		return fmt.Errorf("the Kueue manager reads its metrics certificate from %s (fixed in cmd/kueue when internal certificate management is off): %w", kueueMetricsCertDir, err)
	}
	lock, err := os.OpenFile(filepath.Join(kueueMetricsCertDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if c, err := tls.LoadX509KeyPair(filepath.Join(kueueMetricsCertDir, "tls.crt"), filepath.Join(kueueMetricsCertDir, "tls.key")); err == nil &&
		c.Leaf != nil && time.Until(c.Leaf.NotAfter) > 24*time.Hour {
		return nil
	}
	_, err = writeServingCert(kueueMetricsCertDir, []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	return err
}
