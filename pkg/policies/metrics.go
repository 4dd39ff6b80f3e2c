package policies

import (
	"github.com/prometheus/client_golang/prometheus"

	kgmetrics "github.com/kueue-guard/kueue-guard/pkg/metrics"
)

// Metrics are the policy engine's Prometheus series. They are created per engine
// and registered into the Registerer the caller passes (never package globals), so
// tests can read them from their own registry.
type Metrics struct {
	// Violations counts policy results, by policy id and effective enforcement.
	Violations *prometheus.CounterVec
	// Duration observes the time to evaluate the policy set for one request,
	// waiting for a slot included, by outcome (ok, error).
	Duration *prometheus.HistogramVec
	// Errors counts evaluations that failed, by reason.
	Errors *prometheus.CounterVec
	// Loads counts policy sets that were compiled and swapped in.
	Loads prometheus.Counter
	// LoadErrors counts policy sets that were refused (parse, compile or read
	// errors); the previous set keeps serving.
	LoadErrors prometheus.Counter
	// Policies is the number of policies in the serving set.
	Policies prometheus.Gauge
	// Decisions counts evaluations answered from the decision cache (hit)
	// and evaluated then kept (miss).
	Decisions *prometheus.CounterVec

	// durationOK and durationError are Duration's two series, bound once:
	// every evaluated request observes one.
	durationOK, durationError    prometheus.Observer
	decisionHits, decisionMisses prometheus.Counter
}

// bind binds the per-request series' labels once.
func (m *Metrics) bind() *Metrics {
	m.durationOK = m.Duration.WithLabelValues("ok")
	m.durationError = m.Duration.WithLabelValues("error")
	m.decisionHits = m.Decisions.WithLabelValues("hit")
	m.decisionMisses = m.Decisions.WithLabelValues("miss")
	return m
}

// NewMetrics creates the series and registers them with reg; a nil reg leaves them
// unregistered (they still count, which keeps the engine free of nil checks).
// Series already registered under the same name are reused, so a process that
// builds a second engine shares them instead of failing.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kueue_guard_policy_violations_total",
			Help: "Rego policy results, by policy id and enforcement (deny, warn, dryrun).",
		}, []string{"policy", "enforcement"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kueue_guard_policy_evaluation_duration_seconds",
			Help:    "Time to evaluate the Rego policy set for one request, waiting for a slot included, by outcome (ok, error).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}, []string{"outcome"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kueue_guard_policy_evaluation_errors_total",
			Help: "Rego evaluations that failed, by reason (evaluation, deadline, no_slot, cancelled, not_loaded, input).",
		}, []string{"reason"}),
		Loads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kueue_guard_policy_set_loads_total",
			Help: "Policy sets compiled and swapped in.",
		}),
		LoadErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kueue_guard_policy_set_load_errors_total",
			Help: "Policy sets refused because a file could not be read, parsed or compiled; the previous set keeps serving.",
		}),
		Policies: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kueue_guard_policy_set_policies",
			Help: "Number of policies in the serving policy set.",
		}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kueue_guard_policy_decision_cache_total",
			Help: "Policy evaluations answered from the decision cache (hit) or evaluated and kept (miss).",
		}, []string{"result"}),
	}
	if reg == nil {
		return m.bind(), nil
	}
	var err error
	if m.Violations, err = kgmetrics.Register(reg, m.Violations); err != nil {
		return nil, err
	}
	if m.Duration, err = kgmetrics.Register(reg, m.Duration); err != nil {
		return nil, err
	}
	if m.Errors, err = kgmetrics.Register(reg, m.Errors); err != nil {
		return nil, err
	}
	if m.Loads, err = kgmetrics.Register(reg, m.Loads); err != nil {
		return nil, err
	}
	if m.LoadErrors, err = kgmetrics.Register(reg, m.LoadErrors); err != nil {
		return nil, err
	}
	if m.Policies, err = kgmetrics.Register(reg, m.Policies); err != nil {
		return nil, err
	}
	if m.Decisions, err = kgmetrics.Register(reg, m.Decisions); err != nil {
		return nil, err
	}
	return m.bind(), nil
}
