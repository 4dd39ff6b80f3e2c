package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kueue-guard/kueue-guard/pkg/audit"
	"github.com/kueue-guard/kueue-guard/pkg/review"
)

// Audit runs `kueue-guard audit -o json` against the control plane with args
// (besides --kubeconfig and -o) and returns its exit code, its report and what
// it wrote to stderr.
func (e *Env) Audit(ctx context.Context, args ...string) (int, *review.Report, string, error) {
	c := &audit.CLI{}
	fs := pflag.NewFlagSet("audit", pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse(append([]string{"--kubeconfig", e.KubeconfigPath, "-o", "json"}, args...)); err != nil {
		return 0, nil, "", err
	}
	var out, errOut bytes.Buffer
	code, _ := c.Run(ctx, fs, &out, &errOut)
	report := &review.Report{}
	if err := json.Unmarshal(out.Bytes(), report); err != nil {
		return code, nil, errOut.String(), fmt.Errorf("audit's report: %w\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
	}
	return code, report, errOut.String(), nil
}
