package testenv

import (
	"github.com/onsi/ginkgo/v2"
)

// ReportFailure is the suites' ReportAfterEach: after a failed spec it keeps the
// control plane's logs (Stop leaves them in place) and attaches their summary
// to the report. env may be nil (the suite failed before starting it).
func ReportFailure(env *Env, r ginkgo.SpecReport) {
	if r.Failed() && env != nil {
		env.KeepLogs()
		ginkgo.AddReportEntry("control plane logs", env.LogSummary())
	}
}
