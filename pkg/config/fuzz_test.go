package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// FuzzDecode feeds the configuration loader any bytes: it must never panic, and
// a configuration it accepts must be valid and usable (its selectors parse,
// its trusted controllers compile), so that the server never starts on a
// configuration it cannot apply. Seeds: the example and some edge documents.
func FuzzDecode(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("..", "..", "examples", "config.yaml")); err == nil {
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"null",
		"apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\n",
		"apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\ninstallProfile: oss\nintegrations: {frameworks: [batch/job]}\n",
		"apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\ndefaulting:\n  rules:\n  - {name: a, localQueue: q, namespaceSelector: {matchExpressions: [{key: a, operator: In, values: [b]}]}}\n",
		"apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\ntrust: {controllers: [\"group:x\", \"system:serviceaccount:*\"]}\npolicies: {allowBuiltins: [time.now_ns]}\n",
		"{\"apiVersion\": \"config.kueue-guard.io/v1alpha1\", \"kind\": \"Configuration\", \"exemptNamespaces\": [1]}",
		"a: &a [*a, *a]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Decode(data)
		if err != nil {
			return
		}
		if errs := c.Validate(); len(errs) > 0 {
			t.Fatalf("accepted an invalid configuration: %v", errs)
		}
		for _, r := range c.Defaulting.Rules {
			if _, err := r.Selector(); err != nil {
				t.Fatalf("accepted rule %q whose selector does not parse: %v", r.Name, err)
			}
		}
		_ = trust.New(c.Trust.Controllers).CEL()
		_ = c.IsExempt("team-a", "kueue-guard-system")
	})
}
