package testenv

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	configv1alpha1 "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

func leaderElectionOff() *configv1alpha1.LeaderElectionConfiguration {
	return &configv1alpha1.LeaderElectionConfiguration{LeaderElect: new(false)}
}
