package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const (
	// JobSetNamespace and JobSetServiceAccount are where and as whom JobSet's chart
	// runs its operator (release "jobset" in jobset-system).
	JobSetNamespace      = "jobset-system"
	JobSetServiceAccount = "jobset-controller-manager"
	// KubeRayNamespace and KubeRayServiceAccount are where and as whom KubeRay's
	// operator runs in its usual install.
	KubeRayNamespace      = "ray-system"
	KubeRayServiceAccount = "kuberay-operator"
)

// Operator is a framework's operator (JobSet's, KubeRay's), built by `make testbin`
// from the module version whose CRDs Start installs, running as a child process
// under its own ServiceAccount with the RBAC its project ships.
type Operator struct {
	Process *Process
	// Username is the identity the operator's API requests carry.
	Username string
	// Mutating and Validating are its webhook configurations as registered (nil
	// for an operator that serves none).
	Mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration
}

// StartJobSet runs the JobSet operator with its webhooks, as JobSet's chart
// installs it: its ServiceAccount, RBAC and webhook configurations come from the
// chart in the module cache, each webhook pointed at a local port. It returns once
// the operator's webhook defaults a JobSet. The process lives until ctx ends or
// Env.Stop.
func (e *Env) StartJobSet(ctx context.Context) (*Operator, error) {
	const module = "sigs.k8s.io/jobset"
	if err := checkBuiltVersion("jobset", module); err != nil {
		return nil, err
	}
	dir, err := e.operatorDir("jobset-")
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "webhook-certs")
	ca, err := writeServingCert(certDir, []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	webhookAddr, probeAddr, err := twoFreeAddrs()
	if err != nil {
		return nil, err
	}
	port, err := portOf(webhookAddr)
	if err != nil {
		return nil, err
	}
	cfg, err := yaml.Marshal(map[string]any{
		"apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
		"webhook":                map[string]any{"host": "127.0.0.1", "port": port, "certDir": certDir},
		"health":                 map[string]any{"healthProbeBindAddress": probeAddr},
		"metrics":                map[string]any{"bindAddress": "0"},
		"leaderElection":         map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{"enable": false},
	})
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return nil, err
	}
	objs, err := renderModuleChart(module, "charts/jobset", "jobset", JobSetNamespace, nil)
	if err != nil {
		return nil, err
	}
	op := &Operator{}
	if op.Mutating, op.Validating, err = pointWebhooks(objs, "https://"+webhookAddr, ca); err != nil {
		return nil, err
	}
	if op.Mutating == nil || op.Validating == nil {
		return nil, errors.New("JobSet's chart rendered no webhook configurations")
	}
	kubeconfig, err := e.installOperator(ctx, JobSetNamespace, JobSetServiceAccount, dir, rbacOf(objs))
	if err != nil {
		return nil, err
	}
	if err := e.runOperator(ctx, op, "jobset-manager", probeAddr, dir,
		"--config="+cfgPath, "--kubeconfig="+kubeconfig, "--zap-log-level=2"); err != nil {
		return nil, err
	}
	op.Username = "system:serviceaccount:" + JobSetNamespace + ":" + JobSetServiceAccount
	// Registered once the server listens, as a rolling install's are served once
	// its pod is ready; then wait until the API server calls them.
	if err := e.applyObjects(ctx, op.Mutating, op.Validating); err != nil {
		return nil, err
	}
	return op, op.Process.waitFor(ctx, time.Minute, "JobSet's webhook defaulting a JobSet", func() (bool, error) {
		js := probeJobSet()
		if err := e.Client.Create(ctx, js, client.DryRunAll); err != nil {
			return false, err // not called yet (or refused by another webhook): retried, reported on timeout
		}
		_, found, _ := unstructured.NestedMap(js.Object, "spec", "successPolicy")
		return found, nil
	})
}

// StartKubeRay runs the KubeRay operator (without its optional webhooks, as its
// chart's default does) under the ServiceAccount KubeRay's install uses, bound to
// the ClusterRole the ray-operator module ships. It returns once the operator is
// ready.
func (e *Env) StartKubeRay(ctx context.Context) (*Operator, error) {
	const module = "github.com/ray-project/kuberay/ray-operator"
	if err := checkBuiltVersion("kuberay", module); err != nil {
		return nil, err
	}
	src, err := ModuleDir(module)
	if err != nil {
		return nil, err
	}
	roleYAML, err := os.ReadFile(filepath.Join(src, "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(roleYAML)
	if err != nil {
		return nil, fmt.Errorf("KubeRay's config/rbac/role.yaml: %w", err)
	}
	dir, err := e.operatorDir("kuberay-")
	if err != nil {
		return nil, err
	}
	_, probeAddr, err := twoFreeAddrs()
	if err != nil {
		return nil, err
	}
	kubeconfig, err := e.installOperator(ctx, KubeRayNamespace, KubeRayServiceAccount, dir, rbacOf(objs))
	if err != nil {
		return nil, err
	}
	op := &Operator{Username: "system:serviceaccount:" + KubeRayNamespace + ":" + KubeRayServiceAccount}
	return op, e.runOperator(ctx, op, "kuberay-operator", probeAddr, dir,
		"--kubeconfig="+kubeconfig, "--metrics-addr=0", "--health-probe-bind-address="+probeAddr, "--enable-leader-election=false",
		"--log-stdout-encoder=console")
}

// operatorDir is a directory of its own under the control plane's.
func (e *Env) operatorDir(prefix string) (string, error) {
	base, err := e.children.dir()
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(base, prefix)
}

// rbacOf picks the ClusterRoles of rendered objects (the operator's permissions);
// installOperator binds each to the operator's ServiceAccount itself.
func rbacOf(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetAnnotations()["helm.sh/hook"] == "" &&
			o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-edit"] == "" &&
			o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"] == "" {
			out = append(out, o)
		}
	}
	return out
}

// installOperator creates the operator's namespace and ServiceAccount, the
// ClusterRoles with a binding each to it, and returns a kubeconfig with its token.
func (e *Env) installOperator(ctx context.Context, namespace, sa, dir string, roles []*unstructured.Unstructured) (string, error) {
	apply := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}},
	}
	for _, r := range roles {
		r = r.DeepCopy()
		r.SetNamespace("")
		apply = append(apply, r, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + r.GetName()},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.GetName()},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa}},
		})
	}
	if err := e.applyObjects(ctx, apply...); err != nil {
		return "", err
	}
	return e.serviceAccountKubeconfig(ctx, namespace, sa, dir)
}

// runOperator starts bin/testcp/<binary> and waits for its readiness probe.
func (e *Env) runOperator(ctx context.Context, op *Operator, binary, probeAddr, dir string, args ...string) error {
	p, err := e.children.start(ctx, binary, filepath.Join(e.assets, binary), args, filepath.Join(dir, binary+".log"))
	if err != nil {
		return err
	}
	op.Process = p
	return p.waitReady(ctx, binary+"'s readiness probe", probeAddr)
}

// twoFreeAddrs are two distinct local addresses nothing listens on.
func twoFreeAddrs() (string, string, error) {
	addrs, err := freeAddrs(2)
	if err != nil {
		return "", "", err
	}
	return addrs[0], addrs[1], nil
}

// probeJobSet is a minimal JobSet for a dry run, with requests so that kueue-guard's
// shipped policies (when its webhooks are registered too) admit it.
func probeJobSet() *unstructured.Unstructured {
	container := map[string]any{"name": "c", "image": "busybox",
		"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "8Mi"}}}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"generateName": "testenv-jobset-probe-", "namespace": metav1.NamespaceDefault,
			"labels": map[string]any{"kueue.x-k8s.io/queue-name": "testenv-probe"}},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{"name": "w", "replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"podReplacementPolicy": "Failed",
				"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
					"containers": []any{container}}}}}}}},
	}}
}
