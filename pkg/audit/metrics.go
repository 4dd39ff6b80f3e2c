package audit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	kgmetrics "github.com/kueue-guard/kueue-guard/pkg/metrics"
)

// Metrics are the audit loop's. No label names a namespace or an object: the
// Reports do.
type Metrics struct {
	// Results are the last run's findings by rule (a policy id or a built-in
	// rule), enforcement and result (fail for deny, warn for warn and dryrun).
	Results *prometheus.GaugeVec
	// Workloads are the last run's workloads by result: pass, fail, warn,
	// error.
	Workloads *prometheus.GaugeVec
	// Scanned is how many workloads the last run judged.
	Scanned prometheus.Gauge
	// LastRun and Duration are when the last run started and how long it took.
	LastRun, Duration prometheus.Gauge
	// Errors counts runs that failed.
	Errors prometheus.Counter
	// Leader is 1 while this replica holds the audit Lease.
	Leader prometheus.Gauge
	// ReportWrites counts the Reports created, updated and deleted; a Report
	// that already says what the run found is not written.
	ReportWrites *prometheus.CounterVec
}

// NewMetrics registers the audit metrics (reusing those already registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Results: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kueue_guard_audit_results",
			Help: "Findings of the last audit run, by policy (a policy id or a built-in rule), enforcement and result (fail, warn)."},
			[]string{"policy", "enforcement", "result"}),
		Workloads: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kueue_guard_audit_workloads",
			Help: "Workloads of the last audit run by result: pass (no finding), fail (would be denied), warn (warnings or dryrun findings only), error."},
			[]string{"result"}),
		Scanned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kueue_guard_audit_objects_scanned",
			Help: "Workloads the last audit run judged."}),
		LastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kueue_guard_audit_last_run_timestamp_seconds",
			Help: "When the last audit run started (Unix time)."}),
		Duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kueue_guard_audit_last_run_duration_seconds",
			Help: "How long the last audit run took: listing, judging and writing the Reports."}),
		Errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "kueue_guard_audit_errors_total",
			Help: "Audit runs that failed (listing, a run longer than audit.interval, writing the reports)."}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kueue_guard_audit_leader",
			Help: "1 while this replica holds the audit Lease and audits."}),
		ReportWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kueue_guard_audit_report_writes_total",
			Help: "OpenReports Reports the audit wrote, by operation (create, update, delete); an unchanged Report is not rewritten."},
			[]string{"operation"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.Results, err = kgmetrics.Register(reg, m.Results); err != nil {
		return nil, err
	}
	if m.Workloads, err = kgmetrics.Register(reg, m.Workloads); err != nil {
		return nil, err
	}
	for _, g := range []*prometheus.Gauge{&m.Scanned, &m.LastRun, &m.Duration, &m.Leader} {
		if *g, err = kgmetrics.Register(reg, *g); err != nil {
			return nil, err
		}
	}
	if m.Errors, err = kgmetrics.Register(reg, m.Errors); err != nil {
		return nil, err
	}
	if m.ReportWrites, err = kgmetrics.Register(reg, m.ReportWrites); err != nil {
		return nil, err
	}
	return m, nil
}

// Result values, as OpenReports names them.
const (
	ResultPass  = "pass"
	ResultFail  = "fail"
	ResultWarn  = "warn"
	ResultError = "error"
)

// findingResult is a finding's result: fail for a denial, warn otherwise.
func findingResult(v admission.Violation) string {
	if v.Enforcement == admission.EnforcementDeny {
		return ResultFail
	}
	return ResultWarn
}

// workloadResult is the worst of a workload's results.
func workloadResult(j *Judged) string {
	if j.Err != nil {
		return ResultError
	}
	out := ResultPass
	for _, v := range j.Findings {
		if r := findingResult(v); r == ResultFail {
			return ResultFail
		} else if r == ResultWarn {
			out = ResultWarn
		}
	}
	return out
}

// publish replaces the gauges with the run's figures.
func (m *Metrics) publish(run *Run) {
	m.Results.Reset()
	m.Workloads.Reset()
	for _, r := range []string{ResultPass, ResultFail, ResultWarn, ResultError} {
		m.Workloads.WithLabelValues(r).Set(0)
	}
	for _, j := range run.Workloads {
		m.Workloads.WithLabelValues(workloadResult(j)).Inc()
		for _, v := range j.Findings {
			m.Results.WithLabelValues(v.Rule, string(v.Enforcement), findingResult(v)).Inc()
		}
	}
	m.Scanned.Set(float64(len(run.Workloads)))
	m.LastRun.Set(float64(run.At.UnixNano()) / 1e9)
	m.Duration.Set(run.Took.Seconds())
}

// wrote counts a Report write; a Loop made without NewLoop (in unit tests) has
// no metrics.
func (m *Metrics) wrote(operation string) {
	if m != nil {
		m.ReportWrites.WithLabelValues(operation).Inc()
	}
}
