package handlers

import (
	"github.com/prometheus/client_golang/prometheus"

	kgmetrics "github.com/kueue-guard/kueue-guard/pkg/metrics"
)

// Metrics are the webhook's Prometheus series. They are created per server (not as
// package globals) so tests can use their own registry.
type Metrics struct {
	Requests   *prometheus.CounterVec
	Latency    *prometheus.HistogramVec
	Violations *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kueue_guard_admission_requests_total",
			Help: "Admission requests handled, by webhook, operation and decision (allowed, patched, denied, error).",
		}, []string{"webhook", "operation", "decision"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kueue_guard_admission_duration_seconds",
			Help:    "Time to decide an admission request, by webhook and decision.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}, []string{"webhook", "decision"}),
		Violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kueue_guard_violations_total",
			Help: "Rule violations found, by webhook, rule and enforcement (deny, warn, dryrun).",
		}, []string{"webhook", "rule", "enforcement"}),
	}
	var err error
	if m.Requests, err = kgmetrics.Register(reg, m.Requests); err != nil {
		return nil, err
	}
	if m.Latency, err = kgmetrics.Register(reg, m.Latency); err != nil {
		return nil, err
	}
	if m.Violations, err = kgmetrics.Register(reg, m.Violations); err != nil {
		return nil, err
	}
	return m, nil
}
