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
	dirs, err := moduleDirs([]string{"sigs.k8s.io/kueue"})
	if err != nil {
		return nil, err
	}
	chrt, err := loader.Load(filepath.Join(dirs["sigs.k8s.io/kueue"], "charts", "kueue"))
	if err != nil {
		return nil, fmt.Errorf("loading Kueue's chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering Kueue's chart: %w", err)
	}
	var out []*unstructured.Unstructured
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") || strings.Contains(name, "/tests/") {
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(content)), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if err == io.EOF {
					break
				}
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(obj.Object) > 0 {
				out = append(out, obj)
			}
		}
	}
	return out, nil
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
