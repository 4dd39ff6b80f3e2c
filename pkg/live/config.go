package live

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadConfig is the REST configuration the kubeconfig flags choose, loaded as
// kubectl loads it (with WithClientRate); what names the flag that needs it in
// the error about a missing kubeconfig.
func LoadConfig(kube *genericclioptions.ConfigFlags, what string) (*rest.Config, error) {
	loader := kube.ToRawKubeConfigLoader()
	where := "kubeconfig"
	if p := kube.KubeConfig; p != nil && *p != "" {
		where += " " + *p
	}
	restCfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	// With no kubeconfig anywhere, client-go falls back to an insecure
	// http://localhost:8080 (or $KUBERNETES_MASTER); in a pod it uses the pod's
	// service account, which is a real cluster. Say what is missing rather than
	// report a refused connection to a server nobody named.
	if raw, err := loader.RawConfig(); err == nil && len(raw.Clusters) == 0 &&
		os.Getenv("KUBERNETES_MASTER") == "" && restCfg.Host == clientcmd.ClusterDefaults.Server {
		return nil, errors.New(what + ": no kubeconfig: give --kubeconfig, set KUBECONFIG, or create ~/.kube/config")
	}
	return WithClientRate(restCfg), nil
}
