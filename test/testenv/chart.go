package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/pkg/config"
)

// ServerNamespace is the namespace StartServer runs the server as; the chart is
// rendered into it so that the chart's "release namespace" exclusions and the
// server's own exemption name the same namespace.
const ServerNamespace = "kueue-guard-system"

// LoadChart loads the repository's Helm chart as release kueue-guard in
// ServerNamespace, the release whose Service testenv's WebhookOptions name.
func LoadChart() (*chart.Chart, error) {
	c, err := chart.Load(filepath.Join(RepoRoot(), chart.Dir))
	if err != nil {
		return nil, err
	}
	c.ReleaseName, c.Namespace = chart.DefaultReleaseName, ServerNamespace
	return c, nil
}

// RenderChart renders the repository's chart, as LoadChart loads it, with values.
func RenderChart(values map[string]any) ([]*unstructured.Unstructured, error) {
	c, err := LoadChart()
	if err != nil {
		return nil, err
	}
	return c.Render(values)
}

// ChartWebhooks renders the chart's two webhook configurations with values, in
// the form Start takes: envtest rewrites their Service references into URLs of
// the local serving port and sets the caBundle, and keeps everything else
// (rules, selectors, policies) as the chart rendered it.
func ChartWebhooks(values map[string]any) ([]*admissionregistrationv1.MutatingWebhookConfiguration,
	[]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	c, err := LoadChart()
	if err != nil {
		return nil, nil, err
	}
	m, v, err := c.WebhookConfigurations(values)
	if err != nil {
		return nil, nil, err
	}
	return []*admissionregistrationv1.MutatingWebhookConfiguration{m},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{v}, nil
}

// ChartConfiguration renders the chart with values and returns the server
// configuration from its config ConfigMap, loaded as `serve --config` loads it.
// The policies ConfigMap is written into policyDir exactly as the kubelet would
// project it (keys to paths through the volume's items), and the configuration
// points there instead of the in-cluster mount.
func ChartConfiguration(values map[string]any, policyDir string) (*config.Configuration, error) {
	objs, err := RenderChart(values)
	if err != nil {
		return nil, err
	}
	var (
		cfg      *config.Configuration
		policies *corev1.ConfigMap
		items    []corev1.KeyToPath
	)
	for _, u := range objs {
		switch {
		case u.GetKind() == "ConfigMap" && strings.HasSuffix(u.GetName(), "-config"):
			obj, err := chart.DecodeStrict(u)
			if err != nil {
				return nil, err
			}
			if cfg, err = config.Decode([]byte(obj.(*corev1.ConfigMap).Data["config.yaml"])); err != nil {
				return nil, fmt.Errorf("the chart's configuration: %w", err)
			}
		case u.GetKind() == "ConfigMap" && strings.HasSuffix(u.GetName(), "-policies"):
			obj, err := chart.DecodeStrict(u)
			if err != nil {
				return nil, err
			}
			policies = obj.(*corev1.ConfigMap)
		case u.GetKind() == "Deployment":
			obj, err := chart.DecodeStrict(u)
			if err != nil {
				return nil, err
			}
			for _, v := range obj.(*appsv1.Deployment).Spec.Template.Spec.Volumes {
				if v.Name == "policies" && v.ConfigMap != nil {
					items = v.ConfigMap.Items
				}
			}
		}
	}
	if cfg == nil || policies == nil {
		return nil, errors.New("the chart rendered no configuration or policies ConfigMap")
	}
	if len(items) == 0 {
		for k := range policies.Data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		p := filepath.Join(policyDir, filepath.FromSlash(it.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(policies.Data[it.Key]), 0o644); err != nil {
			return nil, err
		}
	}
	cfg.Policies.Directory = policyDir
	return cfg, nil
}

// WebhookCalls reads, from the API server's own metrics, how many times it has
// called each admission webhook (by webhook name, whatever the outcome). It
// observes the API server's decision to call a webhook, which depends only on
// the configuration's rules and selectors, not on what the webhook answered.
func WebhookCalls(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	const metric = "apiserver_admission_webhook_request_total{"
	calls := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		labels, value, ok := strings.Cut(line[len(metric):], "} ")
		if !ok {
			return nil, fmt.Errorf("unparsable metric line %q", line)
		}
		name := ""
		for l := range strings.SplitSeq(labels, ",") {
			if v, ok := strings.CutPrefix(l, `name="`); ok {
				name = strings.TrimSuffix(v, `"`)
			}
		}
		n, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		calls[name] += n
	}
	return calls, sc.Err()
}

// ChartAdmissionPolicies renders the chart with values and returns the
// ValidatingAdmissionPolicy of one built-in rule's CEL twin (labelled with the
// rule's id) and its binding, ready to create.
func ChartAdmissionPolicies(values map[string]any, rule string) ([]*unstructured.Unstructured, error) {
	objs, err := RenderChart(values)
	if err != nil {
		return nil, err
	}
	policies := map[string]bool{}
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "ValidatingAdmissionPolicy" && u.GetLabels()["kueue-guard.io/rule"] == rule {
			policies[u.GetName()] = true
			out = append(out, u)
		}
	}
	for _, u := range objs {
		name, _, _ := unstructured.NestedString(u.Object, "spec", "policyName")
		if u.GetKind() == "ValidatingAdmissionPolicyBinding" && policies[name] {
			out = append(out, u)
		}
	}
	if len(policies) == 0 {
		return nil, fmt.Errorf("the chart renders no admission policy for rule %s", rule)
	}
	return out, nil
}

// ChartMutatingPolicies renders the chart with values and returns its
// MutatingAdmissionPolicies (the mutating steps' twins) and their bindings,
// ready to create.
func ChartMutatingPolicies(values map[string]any) ([]*unstructured.Unstructured, error) {
	objs, err := RenderChart(values)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "MutatingAdmissionPolicy" || u.GetKind() == "MutatingAdmissionPolicyBinding" {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the chart renders no mutating admission policy")
	}
	return out, nil
}
