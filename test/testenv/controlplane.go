package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	configv1alpha1 "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/yaml"
)

// This file runs the real kube-controller-manager and the real Kueue manager (both
// built by `make testbin`) as child processes of the test binary, next to envtest's
// kube-apiserver and etcd, so that integration tests see real controllers, under
// their real identities, and Kueue's own webhooks.
//
// envtest already runs kube-apiserver with --authorization-mode=RBAC, a
// service-account issuer and signing key (so the TokenRequest API works), and its
// admin user in system:masters, so neither component needs API server flags of its
// own.

// DefaultKubeControllers are the kube-controller-manager controllers
// StartKubeControllerManager runs (canonical names from k8s.io/kubernetes
// cmd/kube-controller-manager/names, v1.35): the workload controllers whose pods and
// child objects Kueue and kueue-guard see, the ServiceAccount controller (every
// namespace gets `default`), the garbage collector and namespace controller (owned
// objects and deleted namespaces go away), and the ClusterRole aggregation
// controller, without which the built-in admin, edit and view ClusterRoles have no
// rules: the API server creates them with an aggregation rule only.
var DefaultKubeControllers = []string{
	"job-controller",
	"cronjob-controller",
	"replicaset-controller",
	"deployment-controller",
	"statefulset-controller",
	"serviceaccount-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"clusterrole-aggregation-controller",
}

// KubeControllerManagerOptions change how StartKubeControllerManagerWith runs
// kube-controller-manager; the zero value is what StartKubeControllerManager runs.
type KubeControllerManagerOptions struct {
	// Controllers replaces DefaultKubeControllers.
	Controllers []string
	// Args are extra flags, appended after ours (the last occurrence of a flag wins).
	Args []string
}

// ControllerUsername is the identity a kube-controller-manager controller acts as
// under --use-service-account-credentials, e.g. ControllerUsername("replicaset")
// is system:serviceaccount:kube-system:replicaset-controller. Tests compare
// request identities with it.
func ControllerUsername(controller string) string {
	return "system:serviceaccount:kube-system:" + strings.TrimSuffix(controller, "-controller") + "-controller"
}

// StartKubeControllerManager runs bin/testcp/kube-controller-manager with
// DefaultKubeControllers, each controller under its own service account
// (--use-service-account-credentials), and waits until the controllers work: the
// `default` ServiceAccount appears in a fresh namespace. The process lives until
// ctx ends or Env.Stop (so pass the suite's context, not a spec's).
func (e *Env) StartKubeControllerManager(ctx context.Context) (*Process, error) {
	return e.StartKubeControllerManagerWith(ctx, KubeControllerManagerOptions{})
}

// StartKubeControllerManagerWith is StartKubeControllerManager with options.
func (e *Env) StartKubeControllerManagerWith(ctx context.Context, opts KubeControllerManagerOptions) (*Process, error) {
	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultKubeControllers
	}
	dir, err := e.children.dir()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		// The root client (which creates the controllers' service accounts and
		// requests their tokens) is envtest's admin; every controller then uses a
		// token of its own service account in kube-system.
		"--kubeconfig=" + e.KubeconfigPath,
		"--use-service-account-credentials=true",
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		// No HTTPS serving: nothing scrapes it, and it would need delegated
		// authentication and authorization kubeconfigs.
		"--secure-port=0",
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		"--v=2",
	}, opts.Args...)
	p, err := e.children.start(ctx, "kube-controller-manager", filepath.Join(e.assets, "kube-controller-manager"), args,
		filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	if err := e.waitForControllers(ctx, p); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

// waitForControllers waits until the ServiceAccount controller has created the
// `default` ServiceAccount in a new namespace, then deletes the namespace.
func (e *Env) waitForControllers(ctx context.Context, p *Process) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "testenv-kcm-probe-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return err
	}
	defer func() { _ = e.Client.Delete(context.Background(), ns) }()
	return p.waitFor(ctx, 2*time.Minute, "the default ServiceAccount in a new namespace", func() (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// DefaultKueueFrameworks are the integrations StartKueue enables when
// KueueOptions.Frameworks is empty: the kinds the managed install supports that the
// test control plane has controllers for (Job, pods, Deployments, StatefulSets)
// and JobSet, whose CRD testenv installs.
var DefaultKueueFrameworks = []string{"batch/job", "pod", "deployment", "statefulset", "jobset.x-k8s.io/jobset"}

const (
	// KueueNamespace is where StartKueue runs Kueue, as Kueue's default install does.
	KueueNamespace = "kueue-system"
	// KueueServiceAccount is the ServiceAccount Kueue's chart runs the manager as.
	KueueServiceAccount = "kueue-controller-manager"
	// KueueUsername is the identity of Kueue's manager in API requests (unless
	// KueueOptions.AsAdmin): tests and trust rules compare request identities with it.
	KueueUsername = "system:serviceaccount:" + KueueNamespace + ":" + KueueServiceAccount
	// KueueMutatingWebhookConfiguration is the name of Kueue's mutating webhook
	// configuration, as its chart and kustomize install name it; kueue-guard's must
	// sort before it.
	KueueMutatingWebhookConfiguration = "kueue-mutating-webhook-configuration"
	// KueueValidatingWebhookConfiguration is the name of Kueue's validating webhook
	// configuration.
	KueueValidatingWebhookConfiguration = "kueue-validating-webhook-configuration"

	// kueueMetricsCertDir is where cmd/kueue (v0.17) reads its metrics serving
	// certificate when internal certificate management is off; the path is not
	// configurable and the manager exits when the files are missing.
	kueueMetricsCertDir = "/etc/kueue/metrics/certs"
	// kueueRelease is the Helm release name whose rendering gives Kueue's default
	// object names (kueue-controller-manager, kueue-mutating-webhook-configuration).
	kueueRelease = "kueue"
)

// KueueOptions configure the Kueue manager StartKueue runs; the zero value is
// Kueue's default configuration with DefaultKueueFrameworks.
type KueueOptions struct {
	// Frameworks are Kueue's integrations.frameworks; empty means
	// DefaultKueueFrameworks.
	Frameworks []string
	// ExternalFrameworks are Kueue's integrations.externalFrameworks.
	ExternalFrameworks []string
	// ManageJobsWithoutQueueName is Kueue's manageJobsWithoutQueueName.
	ManageJobsWithoutQueueName bool
	// ManagedJobsNamespaceSelector is Kueue's managedJobsNamespaceSelector; nil
	// keeps Kueue's default (every namespace but kube-system and kueue-system). It
	// also goes into Kueue's webhook configurations, as the chart renders them.
	ManagedJobsNamespaceSelector *metav1.LabelSelector
	// FeatureGates are Kueue's featureGates, on top of ours (VisibilityOnDemand off).
	FeatureGates map[string]bool
	// Resources is Kueue's resources section (deviceClassMappings, say).
	Resources *kueueconfig.Resources
	// ReinvocationPolicy is the chart value mutatingWebhook.reinvocationPolicy for
	// Kueue's mutating webhooks; empty keeps the chart's default (Never).
	ReinvocationPolicy admissionregistrationv1.ReinvocationPolicyType
	// ClusterAdmin binds Kueue's ServiceAccount to cluster-admin instead of the RBAC
	// Kueue's chart ships.
	ClusterAdmin bool
	// AsAdmin runs the manager with envtest's admin kubeconfig (system:masters)
	// instead of its ServiceAccount's token.
	AsAdmin bool
	// Args are extra flags of the manager.
	Args []string
}

// Kueue is Kueue's manager running as a child process with its webhooks registered
// in the API server.
type Kueue struct {
	// Process is the running manager; Restart replaces it.
	Process *Process
	// Username is the identity the manager's API requests carry.
	Username string
	// WebhookHost and WebhookPort are where Kueue's webhook server listens; the
	// webhook configurations call https://WebhookHost:WebhookPort<path>.
	WebhookHost string
	WebhookPort int
	// CABundle is the PEM CA of the webhook's serving certificate, in every webhook's
	// clientConfig.
	CABundle []byte
	// CertDir holds the webhook serving certificate (tls.crt, tls.key).
	CertDir string
	// ProbeAddr is the health probe address (/healthz, /readyz).
	ProbeAddr string
	// ConfigPath is the Kueue Configuration file the manager reads.
	ConfigPath string
	// KubeconfigPath is the kubeconfig the manager uses.
	KubeconfigPath string
	// Mutating and Validating are Kueue's webhook configurations as registered.
	Mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration

	env  *Env
	args []string
}

// LogPath is the manager's log file.
func (k *Kueue) LogPath() string { return k.Process.LogPath }

// StartKueue runs bin/testcp/kueue-manager against the control plane with its own
// webhook server on a local port, registers Kueue's webhook configurations (from
// Kueue's chart in the module cache, with each clientConfig pointed at that port)
// and waits until the manager is ready and its webhooks answer. The manager
// authenticates as KueueUsername. Kueue's CRDs are installed by Start; the binary
// must be the Kueue version whose CRDs those are. The process lives until ctx ends,
// Stop or Env.Stop (so pass the suite's context, not a spec's).
func (e *Env) StartKueue(ctx context.Context, opts KueueOptions) (*Kueue, error) {
	base, err := e.children.dir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(base, "kueue-")
	if err != nil {
		return nil, err
	}
	if err := checkKueueVersion(); err != nil {
		return nil, err
	}
	if err := ensureKueueMetricsCert(); err != nil {
		return nil, err
	}
	k := &Kueue{env: e, WebhookHost: "127.0.0.1", CertDir: filepath.Join(dir, "webhook-certs"),
		ConfigPath: filepath.Join(dir, "config.yaml"), Username: KueueUsername}
	if k.CABundle, err = writeServingCert(k.CertDir, []net.IP{net.ParseIP(k.WebhookHost)}, []string{"localhost"}); err != nil {
		return nil, err
	}
	webhookAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if k.WebhookPort, err = portOf(webhookAddr); err != nil {
		return nil, err
	}
	if k.ProbeAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	cfgYAML, err := kueueConfiguration(opts, k)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(k.ConfigPath, cfgYAML, 0o600); err != nil {
		return nil, err
	}

	objs, err := RenderKueueChart(kueueRelease, KueueNamespace, kueueChartValues(opts, cfgYAML))
	if err != nil {
		return nil, err
	}
	if err := e.applyObjects(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}); err != nil {
		return nil, err
	}
	if err := e.installKueueObjects(ctx, objs, opts); err != nil {
		return nil, err
	}
	if opts.AsAdmin {
		k.KubeconfigPath, k.Username = e.KubeconfigPath, "envtest admin (system:masters)"
	} else if k.KubeconfigPath, err = e.serviceAccountKubeconfig(ctx, KueueNamespace, KueueServiceAccount, dir); err != nil {
		return nil, err
	}
	if k.Mutating, k.Validating, err = kueueWebhooks(objs, fmt.Sprintf("https://%s:%d", k.WebhookHost, k.WebhookPort), k.CABundle); err != nil {
		return nil, err
	}

	k.args = append([]string{
		"--config=" + k.ConfigPath,
		"--kubeconfig=" + k.KubeconfigPath,
		"--zap-log-level=2",
	}, opts.Args...)
	if err := k.start(ctx); err != nil {
		return nil, err
	}
	// The webhooks are registered once the server listens, as a rolling Kueue
	// install's are served once its pod is ready.
	if err := e.applyObjects(ctx, k.Mutating, k.Validating); err != nil {
		return nil, errors.Join(err, k.Stop())
	}
	if err := k.waitForWebhooks(ctx); err != nil {
		return nil, errors.Join(err, k.Stop())
	}
	return k, nil
}

// start runs the manager and waits for its readiness probe, which passes once its
// webhook server listens.
func (k *Kueue) start(ctx context.Context) error {
	p, err := k.env.children.start(ctx, "kueue-manager", filepath.Join(k.env.assets, "kueue-manager"), k.args,
		filepath.Join(filepath.Dir(k.ConfigPath), "kueue-manager.log"))
	if err != nil {
		return err
	}
	if k.Process != nil {
		k.env.children.remove(k.Process)
	}
	k.Process = p
	if err := p.waitFor(ctx, 2*time.Minute, "Kueue's readiness probe", func() (bool, error) {
		resp, err := http.Get("http://" + k.ProbeAddr + "/readyz")
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: polled again
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return errors.Join(err, p.Stop())
	}
	return nil
}

// waitForWebhooks waits until Kueue's mutating webhook suspends a dry-run Job that
// names a queue.
func (k *Kueue) waitForWebhooks(ctx context.Context) error {
	return k.Process.waitFor(ctx, time.Minute, "Kueue's webhook to suspend a queued Job", func() (bool, error) {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "testenv-kueue-probe-", Namespace: metav1.NamespaceDefault,
				Labels: map[string]string{"kueue.x-k8s.io/queue-name": "testenv-probe"}},
			Spec: batchv1.JobSpec{PodReplacementPolicy: new(batchv1.Failed), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				// Requests and the replacement policy, so that kueue-guard's shipped
				// policies (when its webhooks are registered too) admit the probe.
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("8Mi")}}}},
			}}},
		}
		if err := k.env.Client.Create(ctx, job, client.DryRunAll); err != nil {
			return false, err // e.g. the webhook is not reachable yet (failurePolicy Fail); retried
		}
		return ptr.Deref(job.Spec.Suspend, false), nil
	})
}

// Stop stops the manager and deletes its webhook configurations, so that the
// cluster behaves as without Kueue rather than failing closed on its webhooks.
func (k *Kueue) Stop() error {
	err := k.Process.Stop()
	ctx := context.Background()
	for _, o := range []client.Object{k.Mutating, k.Validating} {
		if o != nil {
			err = errors.Join(err, client.IgnoreNotFound(k.env.Client.Delete(ctx, o.DeepCopyObject().(client.Object))))
		}
	}
	return err
}

// Resume starts a manager that Stop stopped, with the same configuration, ports
// and certificate, registers its webhook configurations again, and waits until
// its webhooks answer: Kueue reinstalled.
func (k *Kueue) Resume(ctx context.Context) error {
	if err := k.start(ctx); err != nil {
		return err
	}
	if err := k.env.applyObjects(ctx, k.Mutating, k.Validating); err != nil {
		return err
	}
	return k.waitForWebhooks(ctx)
}

// Restart stops the manager and starts it again with the same configuration,
// ports and certificate, keeping its webhook configurations (requests to Kueue's
// webhooks fail meanwhile, as during a restart of a one-replica install), and waits
// until it is ready again. The log file is appended to.
func (k *Kueue) Restart(ctx context.Context) error {
	if err := k.Process.Stop(); err != nil {
		return err
	}
	if err := k.start(ctx); err != nil {
		return err
	}
	return k.waitForWebhooks(ctx)
}

// kueueConfiguration is the Configuration file of the manager.
func kueueConfiguration(opts KueueOptions, k *Kueue) ([]byte, error) {
	frameworks := opts.Frameworks
	if len(frameworks) == 0 {
		frameworks = DefaultKueueFrameworks
	}
	gates := map[string]bool{
		// The visibility API server wants its own certificate at /visibility when
		// internal certificate management is off, and an APIService to be reachable.
		"VisibilityOnDemand": false,
	}
	maps.Copy(gates, opts.FeatureGates)
	cfg := kueueconfig.Configuration{
		TypeMeta:  metav1.TypeMeta{APIVersion: kueueconfig.SchemeGroupVersion.String(), Kind: "Configuration"},
		Namespace: new(KueueNamespace),
		ControllerManager: kueueconfig.ControllerManager{
			Webhook: kueueconfig.ControllerWebhook{Host: k.WebhookHost, Port: new(k.WebhookPort), CertDir: k.CertDir},
			// The metrics server is off ("0"); the manager still loads the metrics
			// certificate from kueueMetricsCertDir.
			Metrics:        kueueconfig.ControllerMetrics{BindAddress: "0"},
			Health:         kueueconfig.ControllerHealth{HealthProbeBindAddress: k.ProbeAddr},
			LeaderElection: leaderElectionOff(),
		},
		ManageJobsWithoutQueueName:   opts.ManageJobsWithoutQueueName,
		ManagedJobsNamespaceSelector: opts.ManagedJobsNamespaceSelector,
		InternalCertManagement:       &kueueconfig.InternalCertManagement{Enable: new(false)},
		Integrations:                 &kueueconfig.Integrations{Frameworks: frameworks, ExternalFrameworks: opts.ExternalFrameworks},
		FeatureGates:                 gates,
		Resources:                    opts.Resources,
	}
	return yaml.Marshal(cfg)
}

// kueueChartValues are the values Kueue's chart renders its webhook configurations
// with: the same manager configuration (the chart derives failure policies and
// namespace selectors from its frameworks and managedJobsNamespaceSelector).
func kueueChartValues(opts KueueOptions, cfgYAML []byte) map[string]any {
	values := map[string]any{"managerConfig": map[string]any{"controllerManagerConfigYaml": string(cfgYAML)}}
	if opts.ReinvocationPolicy != "" {
		values["mutatingWebhook"] = map[string]any{"reinvocationPolicy": string(opts.ReinvocationPolicy)}
	}
	return values
}

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

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount with a token from the TokenRequest API.
func (e *Env) serviceAccountKubeconfig(ctx context.Context, namespace, name, dir string) (string, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 60 * 60)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", namespace, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: name}
	kc.CurrentContext = "testenv"
	path := filepath.Join(dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

// applyObjects creates the objects, or updates them when they exist.
func (e *Env) applyObjects(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		o = o.DeepCopyObject().(client.Object)
		err := e.Client.Create(ctx, o)
		if apierrors.IsAlreadyExists(err) {
			cur := o.DeepCopyObject().(client.Object)
			if err = e.Client.Get(ctx, client.ObjectKeyFromObject(o), cur); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				err = e.Client.Update(ctx, o)
			}
		}
		if err != nil {
			return fmt.Errorf("applying %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
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

func leaderElectionOff() *configv1alpha1.LeaderElectionConfiguration {
	return &configv1alpha1.LeaderElectionConfiguration{LeaderElect: new(false)}
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

// WriteServingCert writes a new CA's serving certificate for ips and names into
// dir (tls.crt, tls.key) and returns the CA's PEM: a certificate rotation.
func WriteServingCert(dir string, ips []net.IP, names []string) ([]byte, error) {
	return writeServingCert(dir, ips, names)
}

// WriteClientCert writes a new CA's client certificate for commonName into dir
// (tls.crt, tls.key) and returns the CA's PEM.
func WriteClientCert(dir, commonName string) ([]byte, error) {
	return writeCert(dir, &x509.Certificate{
		Subject: pkix.Name{CommonName: commonName}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

func writeServingCert(dir string, ips []net.IP, names []string) ([]byte, error) {
	return writeCert(dir, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "testenv-serving"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: ips, DNSNames: names})
}

// writeCert writes tls.crt and tls.key, for tmpl's subject, names and usage
// and signed by a new CA, into dir and returns the CA's PEM.
func writeCert(dir string, tmpl *x509.Certificate) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testenv-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = big.NewInt(2)
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.AddDate(10, 0, 0)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	// Key first: a watcher that sees the new certificate finds its key already there.
	if err := writeFileAtomic(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err == nil {
		_, err = f.Write(data)
		err = errors.Join(err, f.Chmod(mode), f.Close())
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}
	return err
}

func portOf(addr string) (int, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}

// Process is a control plane component running as a child process of the test
// binary, in its own process group, with its output in LogPath.
type Process struct {
	// Name is the component ("kube-controller-manager", "kueue-manager").
	Name string
	// LogPath is the file with the component's stdout and stderr; it is kept when
	// Env.KeepLogs is set (print it when a test fails).
	LogPath string

	cmd      *exec.Cmd
	done     chan struct{}
	err      error
	stopOnce sync.Once
	stopErr  error
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop ends the process group (SIGTERM, SIGKILL after 20s) and waits for it. It is
// safe to call more than once and after the process exited on its own.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
			p.stopErr = fmt.Errorf("%s did not stop within 20s of SIGTERM; killed (log: %s)", p.Name, p.LogPath)
		}
	})
	return p.stopErr
}

// Tail is the last n lines of the log, for failure messages.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond every 100ms until it holds, the process exits, ctx ends or the
// timeout passes; the error names what was awaited and shows the log's tail.
func (p *Process) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.After(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s; log %s:\n%s", p.Name, p.err, what, p.LogPath, p.Tail(40))
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%s: no %s after %s (last error: %v); log %s:\n%s", p.Name, what, timeout, last, p.LogPath, p.Tail(40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// children are the processes an Env started, and the directory of their logs and
// files.
type children struct {
	mu     sync.Mutex
	procs  []*Process
	tmpDir string
	// keepLogs is set by KeepLogs.
	keepLogs bool
}

// KeepLogs makes Stop leave the components' logs and files (LogDir) in place, so
// that a failed suite can point at them.
func (e *Env) KeepLogs() { e.children.mu.Lock(); e.children.keepLogs = true; e.children.mu.Unlock() }

// LogDir is the directory of the components' logs, configuration files and
// certificates; Stop removes it unless KeepLogs was called.
func (e *Env) LogDir() (string, error) { return e.children.dir() }

// Processes are the components started so far, in start order.
func (e *Env) Processes() []*Process {
	e.children.mu.Lock()
	defer e.children.mu.Unlock()
	return slices.Clone(e.children.procs)
}

func (c *children) dir() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tmpDir == "" {
		d, err := os.MkdirTemp("", "kueue-guard-controlplane-")
		if err != nil {
			return "", err
		}
		c.tmpDir = d
	}
	return c.tmpDir, nil
}

// start runs the binary in its own process group. The group is signalled when ctx
// ends, and the kernel kills the process if the test binary dies first, so that no
// component outlives the test.
func (c *children) start(ctx context.Context, name, path string, args []string, logPath string) (*Process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s missing: run `make testbin`: %w", path, err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// remove forgets a stopped process (Kueue.Restart replaces its process).
func (c *children) remove(p *Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = slices.DeleteFunc(c.procs, func(q *Process) bool { return q == p })
}

// stop stops every process, last started first, and removes the directory unless
// logs are kept.
func (c *children) stop() error {
	c.mu.Lock()
	procs, dir, keep := slices.Clone(c.procs), c.tmpDir, c.keepLogs
	c.mu.Unlock()
	var err error
	for _, proc := range slices.Backward(procs) {
		err = errors.Join(err, proc.Stop())
	}
	if dir != "" && !keep {
		err = errors.Join(err, os.RemoveAll(dir))
	}
	return err
}

// setParentDeathSignal asks Linux to SIGKILL the child when the test binary exits
// without stopping it (a timeout panic, a kill). SysProcAttr.Pdeathsig exists only
// on Linux; this file builds everywhere the rest of testenv does.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	if f := reflect.ValueOf(attr).Elem().FieldByName("Pdeathsig"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(syscall.SIGKILL))
	}
}

// KeepLogsOn keeps the components' logs when err is not nil (a suite whose
// control plane could not start), and returns err.
func (e *Env) KeepLogsOn(err error) error {
	if err != nil {
		e.KeepLogs()
	}
	return err
}

// LogSummary names every component's log and shows its last lines, for the
// report of a failed spec.
func (e *Env) LogSummary() string {
	var b strings.Builder
	if d, err := e.LogDir(); err == nil {
		fmt.Fprintf(&b, "logs in %s\n", d)
	}
	for _, p := range e.Processes() {
		fmt.Fprintf(&b, "%s: %s\n%s\n\n", p.Name, p.LogPath, p.Tail(30))
	}
	return b.String()
}
