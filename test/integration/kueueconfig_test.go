package integration

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func runtimeConvert(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// setFrameworks rewrites integrations.frameworks in Kueue's Configuration YAML.
func setFrameworks(data string, frameworks ...string) string {
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
		panic(err)
	}
	integrations, _ := cfg["integrations"].(map[string]any)
	if integrations == nil {
		integrations = map[string]any{}
	}
	list := make([]any, len(frameworks))
	for i, f := range frameworks {
		list[i] = f
	}
	integrations["frameworks"] = list
	cfg["integrations"] = integrations
	out, err := yaml.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	return string(out)
}
