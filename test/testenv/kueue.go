package testenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/yaml"
)

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
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	if k.WebhookPort, err = portOf(addrs[0]); err != nil {
		return nil, err
	}
	k.ProbeAddr = addrs[1]
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
	return p.waitReady(ctx, "Kueue's readiness probe", k.ProbeAddr)
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
