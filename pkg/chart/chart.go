// Package chart loads and renders kueue-guard's Helm chart with Helm's own Go
// library, and computes the chart's generated files. Rendering in Go lets the
// unit tests check every object the chart produces against its typed API struct,
// and lets the envtest suites register the chart's own webhook configurations on
// a real API server, so the selectors users get are the selectors we test.
package chart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Dir is the chart's directory relative to the repository root; the generator,
// the tests and the docs all find the chart here.
const Dir = "manifests/charts/kueue-guard"

// Release defaults match the install line in the chart README, so that names in
// tests are the names users see.
const (
	DefaultReleaseName = "kueue-guard"
	DefaultNamespace   = "kueue-guard-system"
)

// KubeVersion is the Kubernetes version the chart is rendered and linted for:
// the minor of the module's k8s.io/api and of the test control plane.
var KubeVersion = chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"}

// Chart is the loaded chart plus the release it is rendered as.
type Chart struct {
	// Chart is Helm's in-memory chart (templates, values, schema, files).
	Chart *chart.Chart
	// Dir is where the chart was loaded from (helm lint needs the directory).
	Dir string
	// ReleaseName and Namespace are the release's, as `helm install NAME -n NS`.
	ReleaseName, Namespace string
}

// Load reads the chart from dir, to be rendered as release DefaultReleaseName in
// DefaultNamespace unless the caller changes them.
func Load(dir string) (*Chart, error) {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart from %s: %w", dir, err)
	}
	return &Chart{Chart: c, Dir: dir, ReleaseName: DefaultReleaseName, Namespace: DefaultNamespace}, nil
}

// LoadFromRepo loads the chart of the repository containing dir (any directory
// inside it, e.g. a test's working directory).
func LoadFromRepo(dir string) (*Chart, error) {
	root, err := RepoRoot(dir)
	if err != nil {
		return nil, err
	}
	return Load(filepath.Join(root, Dir))
}

// RenderFiles renders the templates with values (merged over values.yaml and
// checked against values.schema.json, exactly as helm install does) and returns
// each non-empty template's output by template path. Rendering is strict: a
// template that reads a value missing from values.yaml is an error, so a typo in
// a template cannot silently render an empty field.
func (c *Chart) RenderFiles(values map[string]any) (map[string]string, error) {
	if values == nil {
		values = map[string]any{}
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = KubeVersion
	vals, err := chartutil.ToRenderValues(c.Chart, values,
		chartutil.ReleaseOptions{Name: c.ReleaseName, Namespace: c.Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	out, err := engine.Engine{Strict: true}.Render(c.Chart, vals)
	if err != nil {
		return nil, err
	}
	for name, content := range out {
		if strings.TrimSpace(content) == "" {
			delete(out, name)
		}
	}
	return out, nil
}

// Render renders the chart's manifests (not NOTES.txt) into objects, in a stable
// order (by template, then document). Every document must parse as YAML without
// duplicate keys and carry apiVersion, kind and metadata.name.
func (c *Chart) Render(values map[string]any) ([]*unstructured.Unstructured, error) {
	files, err := c.RenderFiles(values)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") || !strings.HasSuffix(name, ".yaml") {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		docs := releaseutil.SplitManifests(files[name])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys)) //nolint:revive,forbidigo // helm's order of split manifests is a sort.Interface
		for _, k := range keys {
			doc := docs[k]
			if strings.TrimSpace(doc) == "" {
				continue
			}
			j, err := yaml.YAMLToJSONStrict([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if strings.TrimSpace(string(j)) == "null" {
				continue // only comments
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(j); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if u.GetName() == "" {
				return nil, fmt.Errorf("%s: %s without metadata.name", name, u.GetKind())
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// ErrNotRendered is returned when a value set renders no webhook configuration.
var ErrNotRendered = errors.New("webhook configuration not rendered")

// WebhookConfigurations renders the chart and returns its two webhook
// configurations, decoded strictly into their typed structs: the form envtest's
// WebhookInstallOptions and the drift tests need.
func (c *Chart) WebhookConfigurations(values map[string]any) (*admissionregistrationv1.MutatingWebhookConfiguration,
	*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	objs, err := c.Render(values)
	if err != nil {
		return nil, nil, err
	}
	var (
		mutating   *admissionregistrationv1.MutatingWebhookConfiguration
		validating *admissionregistrationv1.ValidatingWebhookConfiguration
	)
	for _, u := range objs {
		if u.GroupVersionKind().Group != admissionregistrationv1.GroupName {
			continue
		}
		obj, err := DecodeStrict(u)
		if err != nil {
			return nil, nil, err
		}
		switch o := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			mutating = o
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			validating = o
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, ErrNotRendered
	}
	return mutating, validating, nil
}

// RepoRoot walks up from dir to the directory holding kueue-guard's go.mod, so
// that tests (which run in their package directory) and the generator (which
// runs wherever make is) find the chart and the policies.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/kueue-guard/kueue-guard\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kueue-guard's go.mod not found above " + dir)
		}
		dir = parent
	}
}
