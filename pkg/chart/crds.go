package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ReportsModule is the Go module whose Report types the audit writes; its
// CRDs are the ones the chart installs with audit.reports.installCRDs, at the
// version go.mod requires.
const ReportsModule = "github.com/openreports/reports-api"

// CRDFiles are the OpenReports CRDs, relative to the chart directory, keyed by
// their path in ReportsModule.
var CRDFiles = map[string]string{
	"config/crd/openreports.io_reports.yaml":        "files/crds/openreports.io_reports.yaml",
	"config/crd/openreports.io_clusterreports.yaml": "files/crds/openreports.io_clusterreports.yaml",
}

// reportsCRDs reads the OpenReports CRDs from the module cache, at the version
// kueue-guard's go.mod requires (`go list -m` in this package's source
// directory, whatever repository the chart is generated into), keyed by their
// chart path.
func reportsCRDs() (map[string][]byte, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("cannot tell where pkg/chart's sources are, to find %s", ReportsModule)
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", ReportsModule)
	cmd.Dir = filepath.Dir(self)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("finding %s in the module cache (go mod download): %v: %s", ReportsModule, err, stderr.String())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return nil, fmt.Errorf("%s is not downloaded (go mod download %s)", ReportsModule, ReportsModule)
	}
	files := map[string][]byte{}
	for src, dst := range CRDFiles {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(src)))
		if err != nil {
			return nil, err
		}
		header := fmt.Sprintf(generatedHeader, ReportsModule+" "+filepath.Base(dir)+"/"+src)
		files[dst] = append([]byte(header), b...)
	}
	return files, nil
}
