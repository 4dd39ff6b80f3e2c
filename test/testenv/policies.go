package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CopyShippedPolicies copies the repository's shipped policies and their data
// (not their tests) into dir, as the chart's ConfigMap mount would, and returns
// how many files it copied.
func CopyShippedPolicies(dir string) (int, error) {
	src := filepath.Join(RepoRoot(), "policies")
	entries, err := os.ReadDir(src)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, "_test.rego") || (!strings.HasSuffix(name, ".rego") && name != "data.yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return n, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return n, err
		}
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("no shipped policies found in %s", src)
	}
	return n, nil
}
