package policies_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func BenchmarkProbeNone(b *testing.B) {
	RegisterTestingT(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "t.rego"), []byte("package t\n\ndeny contains \"x\" if input.workload.queueName == \"nope\"\n"), 0o644)
	e := loadedEngine(dir)
	benchValidate(b, e, createRequest(gpuJob("bench", 4, "2")), gpuCluster("2"))
}
