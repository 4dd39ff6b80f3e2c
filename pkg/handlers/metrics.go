package handlers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	kgmetrics "github.com/kueue-guard/kueue-guard/pkg/metrics"
)

// Metrics are the webhook's Prometheus series. They are created per server (not as
// package globals) so tests can use their own registry.
type Metrics struct {
	Requests   *prometheus.CounterVec
	Latency    *prometheus.HistogramVec
	Violations *prometheus.CounterVec
	// Throttled counts requests answered 429 at the in-flight limit.
	Throttled prometheus.Counter
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
		Throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kueue_guard_admission_throttled_total",
			Help: "Admission requests answered 429 Too Many Requests at the in-flight limits (--max-in-flight, --max-in-flight-mib); the API server retries them.",
		}),
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
	if m.Throttled, err = kgmetrics.Register(reg, m.Throttled); err != nil {
		return nil, err
	}
	return m, nil
}

// boundMetrics are one handler's series with its labels bound once, so that a
// request costs no label hashing: one per operation and decision. A nil
// boundMetrics (no Metrics given) records nothing.
type boundMetrics struct {
	m        *Metrics
	webhook  string
	requests map[requestKey]prometheus.Counter
	latency  map[string]prometheus.Observer
}

type requestKey struct{ operation, decision string }

// otherOperation counts the requests whose operation no API server sends: the
// operation is the requester's to write, and a series per value would grow
// the metrics without bound.
const otherOperation admissionv1.Operation = "other"

var (
	operations = []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect, otherOperation}
	decisions  = []string{decisionAllowed, decisionPatched, decisionDenied, decisionError}
)

func (m *Metrics) bind(webhook string) *boundMetrics {
	if m == nil {
		return nil
	}
	b := &boundMetrics{m: m, webhook: webhook, requests: map[requestKey]prometheus.Counter{}, latency: map[string]prometheus.Observer{}}
	for _, d := range decisions {
		b.latency[d] = m.Latency.WithLabelValues(webhook, d)
		for _, op := range operations {
			b.requests[requestKey{string(op), d}] = m.Requests.WithLabelValues(webhook, string(op), d)
		}
	}
	return b
}

func (b *boundMetrics) observe(op admissionv1.Operation, decision string, took time.Duration) {
	if b == nil {
		return
	}
	c, ok := b.requests[requestKey{string(op), decision}]
	if !ok {
		c = b.requests[requestKey{string(otherOperation), decision}]
	}
	c.Inc()
	b.latency[decision].Observe(took.Seconds())
}

// violation counts one violation; rules are many and open-ended (policy ids),
// so they are not bound ahead.
func (b *boundMetrics) violation(rule, enforcement string) {
	if b == nil {
		return
	}
	b.m.Violations.WithLabelValues(b.webhook, rule, enforcement).Inc()
}
