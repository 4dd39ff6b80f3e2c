package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// readmeRow is a row of the README's values table: | `key` | `default` | description |
var readmeRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `([^`]*)` \\| (.+) \\|$")

// leaves flattens values into dotted paths; empty maps and lists are leaves.
func leaves(prefix string, v any, out map[string]any) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		for k, child := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			leaves(p, child, out)
		}
		return
	}
	out[prefix] = v
}

var _ = Describe("the chart README", func() {
	var readme string
	var defaults map[string]any

	BeforeEach(func() {
		b, err := os.ReadFile(filepath.Join(kg.Dir, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		readme = string(b)
		raw, err := os.ReadFile(filepath.Join(kg.Dir, "values.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var vals map[string]any
		Expect(yaml.Unmarshal(raw, &vals)).To(Succeed())
		defaults = map[string]any{}
		leaves("", vals, defaults)
	})

	It("lists every value of values.yaml with its default, and no value that does not exist", func() {
		documented := map[string]any{}
		for _, m := range readmeRow.FindAllStringSubmatch(readme, -1) {
			var def any
			Expect(json.Unmarshal([]byte(m[2]), &def)).To(Succeed(), "default of %s is JSON", m[1])
			Expect(documented).NotTo(HaveKey(m[1]), "documented once")
			documented[m[1]] = def
			Expect(m[3]).NotTo(BeEmpty())
		}
		for key := range defaults {
			Expect(documented).To(HaveKey(key), "values.yaml key %s is documented in README.md", key)
		}
		for key, def := range documented {
			Expect(defaults).To(HaveKey(key), "README.md documents %s, which values.yaml does not have", key)
			// Compare through JSON so that numbers and empty collections agree.
			want, err := json.Marshal(defaults[key])
			Expect(err).NotTo(HaveOccurred())
			got, err := json.Marshal(def)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal(string(want)), "README default of %s", key)
		}
	})

	It("gives the install line, the prerequisite and the Kueue safeguard", func() {
		Expect(readme).To(ContainSubstring("helm install kueue-guard manifests/charts/kueue-guard -n kueue-guard-system --create-namespace"))
		Expect(readme).To(ContainSubstring("cert-manager"))
		Expect(readme).To(ContainSubstring("reinvocationPolicy: IfNeeded"))
		Expect(readme).To(ContainSubstring("`" + webhookconfig.MutatingName + "`, which sorts before"))
	})

	It("has values.yaml defaults that name the configurations as pkg/webhookconfig does", func() {
		Expect(defaults["webhooks.mutatingName"]).To(Equal(webhookconfig.MutatingName))
		Expect(defaults["webhooks.validatingName"]).To(Equal(webhookconfig.ValidatingName))
	})

	It("defaults the image tag to the chart's appVersion", func() {
		Expect(defaults["image.tag"]).To(BeEmpty())
		Expect(kg.Chart.Metadata.AppVersion).NotTo(BeEmpty())
		Expect(kg.Chart.Metadata.APIVersion).To(Equal("v2"))
		Expect(kg.Chart.Metadata.Name).To(Equal("kueue-guard"))
	})
})
