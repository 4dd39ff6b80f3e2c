// Command devcluster is `make run`: a local control plane (kube-apiserver and etcd
// from bin/testcp) with Kueue's and every framework's CRDs, the chart's own webhook
// configurations pointed at a local `kueue-guard serve`, Kueue's own manager with
// its webhooks and the kube-controller-manager (both from bin/testcp; --kueue=false
// leaves Kueue out, to see kueue-guard hold workloads while Kueue is away), and the
// examples loaded. It runs until Ctrl-C and cleans up after itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kueue-guard/kueue-guard/test/testenv"
)

func main() {
	binary := flag.String("kueue-guard", "bin/kueue-guard", "The kueue-guard binary to serve with")
	examples := flag.String("examples", "examples", "Directory with config.yaml, cluster-state.yaml and workloads/")
	stateDir := flag.String("state-dir", ".local", "Where to write the kubeconfig and logs")
	withKueue := flag.Bool("kueue", true, "Run Kueue's manager (and the kube-controller-manager); false shows kueue-guard while Kueue is away")
	flag.Parse()
	if err := run(*binary, *examples, *stateDir, *withKueue); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run(binary, examples, stateDir string, withKueue bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}

	fmt.Println("starting kube-apiserver and etcd (bin/testcp), installing CRDs …")
	mutating, validating, err := testenv.ChartWebhooks(nil)
	if err != nil {
		return fmt.Errorf("rendering the chart's webhook configurations: %w", err)
	}
	env, err := testenv.Start(mutating, validating)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping the control plane")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()

	kubeconfig, err := filepath.Abs(filepath.Join(stateDir, "kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return err
	}
	defer os.Remove(kubeconfig)

	if out, stderr, err := env.Kubectl(nil, "create", "namespace", testenv.ServerNamespace); err != nil {
		return fmt.Errorf("creating %s: %v: %s%s", testenv.ServerNamespace, err, out, stderr)
	}

	logPath := filepath.Join(stateDir, "kueue-guard.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	probe, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	o := env.WebhookInstallOptions
	serve := exec.Command(binary, "serve",
		"--kubeconfig", kubeconfig,
		"--config", filepath.Join(examples, "config.yaml"),
		"--cert-dir", o.LocalServingCertDir,
		"--webhook-host", o.LocalServingHost,
		"--webhook-port", strconv.Itoa(o.LocalServingPort),
		"--namespace", testenv.ServerNamespace,
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probe),
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(metrics),
		// On loopback of a local control plane, in the clear, so that a
		// developer can curl them; the chart serves them over HTTPS.
		"--metrics-secure=false",
		"--zap-devel=false")
	serve.Stdout, serve.Stderr = logFile, logFile
	if err := serve.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	defer func() {
		_ = serve.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				fmt.Fprintln(os.Stderr, "kueue-guard exited:", err)
			}
		case <-time.After(20 * time.Second):
			_ = serve.Process.Kill()
		}
	}()
	if err := waitReady(ctx, probe, exited); err != nil {
		return fmt.Errorf("%w (see %s)", err, logPath)
	}

	kueueLine := "Kueue's manager is not running (--kueue=false): kueue-guard holds queued workloads until it is."
	if withKueue {
		fmt.Println("starting the kube-controller-manager and Kueue's manager (bin/testcp) …")
		if _, err := env.StartKubeControllerManager(ctx); err != nil {
			return fmt.Errorf("starting the kube-controller-manager: %w", err)
		}
		k, err := env.StartKueue(ctx, testenv.KueueOptions{})
		if err != nil {
			return fmt.Errorf("starting Kueue's manager: %w", err)
		}
		// The manager runs as a local process; its Deployment, as Kueue's chart
		// installs it, is what kueue-guard reads the running release from
		// (kueue_guard_kueue_info). Its pods are never scheduled: no nodes.
		dep, err := testenv.KueueControllerDeployment("kueue", testenv.KueueNamespace)
		if err == nil {
			err = env.Client.Create(ctx, dep)
		}
		if err != nil {
			return fmt.Errorf("creating Kueue's Deployment: %w", err)
		}
		kueueLine = fmt.Sprintf("Kueue's manager runs with its webhooks (logs: %s).", k.LogPath())
	}

	if out, stderr, err := env.Kubectl(nil, "apply", "-f", filepath.Join(examples, "cluster-state.yaml")); err != nil {
		return fmt.Errorf("applying the example cluster: %v: %s%s", err, out, stderr)
	}

	k := filepath.Join("bin", "testcp", "kubectl")
	fmt.Printf(`
kueue-guard is serving on https://%s:%d (logs: %s, metrics: http://127.0.0.1:%d/metrics).
%s
The example cluster (examples/cluster-state.yaml) is loaded. In another shell:

  export KUBECONFIG=%s

  # 1. A Job without a queue is labeled with its namespace's default queue, and Kueue admits it:
  %s apply -f %s/workloads/job.yaml
  %s get job sample-job -n team-a -o jsonpath='{.metadata.labels}{"\n"}'
  %s get workloads -n team-a

  # 2. An AppWrapper is rejected: the managed Kueue install does not support it:
  %s apply -f %s/workloads/appwrapper.yaml

  # 3. A 10-GPU Job is rejected by the shipped fits-cluster-queue policy:
  %s apply -f %s/workloads/too-many-gpus.yaml

Policies are read from policies/ and reloaded when you edit them. Ctrl-C stops everything.
`, o.LocalServingHost, o.LocalServingPort, logPath, metrics, kueueLine, kubeconfig, k, examples, k, k, k, examples, k, examples)

	select {
	case <-ctx.Done():
		fmt.Println("\nshutting down")
		return nil
	case err := <-exited:
		return fmt.Errorf("kueue-guard exited: %v (see %s)", err, logPath)
	}
}

// waitReady polls /readyz until the server is ready, it exits, or a minute passes.
func waitReady(ctx context.Context, probe int, exited <-chan error) error {
	deadline := time.After(time.Minute)
	url := "http://127.0.0.1:" + strconv.Itoa(probe) + "/readyz"
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("kueue-guard exited before it was ready: %v", err)
		case <-deadline:
			return errors.New("kueue-guard was not ready after a minute")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

var freePort = testenv.FreePort
