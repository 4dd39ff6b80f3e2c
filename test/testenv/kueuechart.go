package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// RenderKueueChart renders Kueue's own Helm chart, as shipped in the
// sigs.k8s.io/kueue module at the version our go.mod requires, into a namespace
// with a release name, and returns every object it renders. Tests use it to
// apply Kueue's controller exactly as a user's `helm install` would.
func RenderKueueChart(release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	return renderModuleChart("sigs.k8s.io/kueue", "charts/kueue", release, namespace, values)
}

// renderModuleChart renders the Helm chart at chartDir of a module (at the version
// our go.mod requires) and returns every object it renders.
func renderModuleChart(module, chartDir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	dir, err := ModuleDir(module)
	if err != nil {
		return nil, err
	}
	chrt, err := loader.Load(filepath.Join(dir, chartDir))
	if err != nil {
		return nil, fmt.Errorf("loading %s's chart: %w", module, err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering %s's chart: %w", module, err)
	}
	var out []*unstructured.Unstructured
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") || strings.Contains(name, "/tests/") {
			continue
		}
		objs, err := decodeObjects([]byte(content))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeObjects reads every object of a multi-document YAML (or JSON) stream.
func decodeObjects(content []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(content), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// KueueControllerDeployment is the controller manager Deployment of Kueue's chart.
func KueueControllerDeployment(release, namespace string) (*unstructured.Unstructured, error) {
	objs, err := RenderKueueChart(release, namespace, nil)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" && strings.HasSuffix(o.GetName(), "controller-manager") {
			return o, nil
		}
	}
	return nil, errors.New("the Kueue chart rendered no controller-manager Deployment")
}
