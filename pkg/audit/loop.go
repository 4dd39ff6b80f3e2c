package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// LeaseName is the Lease, in the server's namespace, whose holder audits.
const LeaseName = "kueue-guard-audit"

// The Lease's timings: a new holder takes over within about LeaseDuration of
// the old one stopping without releasing it (a crash), at once when it
// releases it (a rollout).
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// LoopOptions configure serve's audit loop.
type LoopOptions struct {
	Config       *config.Configuration
	OwnNamespace string
	RESTConfig   *rest.Config
	// Client writes the Reports (uncached; its scheme has openreports.io).
	Client client.Client
	// Pipeline and View are the webhook's own: the audit judges with exactly
	// what admission judges with.
	Pipeline *admission.Pipeline
	View     cluster.View
	// Severity is a rule's severity for the reports (policies' custom.severity).
	Severity func(rule string) string
	// Identity names this replica in the Lease; empty means the host name and
	// a random suffix.
	Identity string
	// Ready fails until the pipeline can judge (caches synced, policies
	// loaded); a run waits for it.
	Ready      func() error
	Registerer prometheus.Registerer
	Logger     logr.Logger
}

// Loop is the audit loop: run by one replica at a time, the holder of the
// Lease. Losing the Lease (an API server outage, say) only pauses the audit:
// the webhook never stops for it.
type Loop struct {
	o       LoopOptions
	lister  *Lister
	metrics *Metrics
	// lastBusy is the last run's work, which sets the next run's pace.
	lastBusy time.Duration
}

// NewLoop validates the options and registers the metrics.
func NewLoop(o LoopOptions) (*Loop, error) {
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = host + "_" + uuid.NewString()[:8]
	}
	if o.Severity == nil {
		o.Severity = func(string) string { return policies.DefaultSeverity }
	}
	m, err := NewMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	lister, err := NewLister(o.RESTConfig)
	if err != nil {
		return nil, err
	}
	return &Loop{o: o, lister: lister, metrics: m}, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the loop
// elects itself (see Start), so that the manager never needs leadership.
func (l *Loop) NeedLeaderElection() bool { return false }

// Start campaigns for the Lease until ctx ends, auditing while it holds it.
func (l *Loop) Start(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(l.o.RESTConfig)
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: l.o.OwnNamespace, Name: LeaseName},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.o.Identity},
	}
	log := l.o.Logger.WithValues("identity", l.o.Identity, "lease", l.o.OwnNamespace+"/"+LeaseName)
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			ReleaseOnCancel: true, Name: LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					log.Info("auditing: this replica holds the audit Lease")
					l.metrics.Leader.Set(1)
					l.auditEvery(lctx)
				},
				OnStoppedLeading: func() {
					l.metrics.Leader.Set(0)
					log.Info("not auditing: the audit Lease is held by another replica or could not be renewed")
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx)
		// Run returns when the Lease is lost or ctx ends; campaign again.
		select {
		case <-ctx.Done():
		case <-time.After(retryPeriod):
		}
	}
	return nil
}

// auditEvery runs the audit at once and then every interval, until ctx ends.
func (l *Loop) auditEvery(ctx context.Context) {
	interval := l.o.Config.Audit.Interval.Duration
	for l.o.Ready != nil && l.o.Ready() != nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	warnedNoReports := false
	for {
		start := time.Now()
		// A run may take at most one interval.
		rctx, cancel := context.WithTimeout(ctx, interval)
		run, err := l.RunOnce(rctx)
		cancel()
		if errors.Is(err, ErrNoReportsAPI) {
			if !warnedNoReports {
				l.o.Logger.Info("audit results go to the metrics only", "reason", err.Error())
				warnedNoReports = true
			}
			err = nil
		}
		if err != nil && ctx.Err() == nil {
			l.metrics.Errors.Inc()
			l.o.Logger.Error(err, "audit run failed")
		} else if run != nil {
			l.o.Logger.Info("audit run done", "workloads", len(run.Workloads), "took", run.Took.Round(time.Millisecond),
				"working", run.Busy.Round(time.Millisecond), "resting", run.Rested.Round(time.Millisecond),
				"writing", run.WriteTook.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(interval))):
		}
	}
}

// Run is one audit run's results.
type Run struct {
	// At is when the run started; Took how long it took: listing and
	// judging (JudgeTook, of which Busy working and Rested at the pacer's
	// rests), then writing the Reports (WriteTook).
	At                         time.Time
	Took, JudgeTook, WriteTook time.Duration
	Busy, Rested               time.Duration
	// Workloads are the judged workloads, with their findings.
	Workloads []*Judged
	Listing   *Listing
}

// Judged is one workload's judgement.
type Judged struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
	// Findings are the violations, whatever their enforcement.
	Findings []admission.Violation
	// Err is set when the pipeline could not judge it.
	Err error
}

// RunOnce lists and judges every workload once, then publishes the metrics
// and (with audit.reports) the Reports. Each workload is judged as it is read
// (a page's objects are garbage once judged), at the pace of a pacer.
func (l *Loop) RunOnce(ctx context.Context) (*Run, error) {
	run := &Run{At: time.Now()}
	interval := time.Duration(0)
	if l.o.Config.Audit.Interval != nil {
		interval = l.o.Config.Audit.Interval.Duration
	}
	pace := newPacer(l.lastBusy, interval)
	// Evaluations take policy slots only when admission does not wait for
	// them, and never more than half.
	// The findings go to the reports and metrics: the per-request log lines
	// of admission (a dryrun violation each) would repeat every run.
	bctx := logr.NewContext(policies.Background(ctx), logr.Discard())
	judge := func(u *unstructured.Unstructured) error {
		start := time.Now()
		gvk := u.GroupVersionKind()
		j := &Judged{APIVersion: u.GetAPIVersion(), Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID()}
		req := &admission.Request{
			UID: types.UID("audit-" + string(u.GetUID())), Operation: admissionv1.Create, Kind: gvk,
			Namespace: u.GetNamespace(), Name: u.GetName(), Object: trimmed(u),
			UserInfo: authenticationv1.UserInfo{Username: Auditor, Groups: []string{"system:authenticated"}},
		}
		d, err := l.o.Pipeline.Workload(bctx, req, l.o.View)
		if err != nil {
			j.Err = err
		} else {
			j.Findings = d.Violations
		}
		run.Workloads = append(run.Workloads, j)
		return pace.did(ctx, time.Since(start))
	}
	listing, err := l.lister.List(ctx, ListOptions{Config: l.o.Config, OwnNamespace: l.o.OwnNamespace,
		Limit: l.o.Config.Audit.MaxObjects, Each: judge, Pace: pace.did})
	run.Busy, run.Rested = pace.totals()
	if err != nil {
		// A run cut short did at least this much: the next one goes faster.
		l.lastBusy = 2 * run.Busy
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the run took longer than audit.interval, %d workloads judged (%v of work, %v resting): %w",
				len(run.Workloads), run.Busy.Round(time.Millisecond), run.Rested.Round(time.Millisecond), err)
		}
		return nil, err
	}
	l.lastBusy = run.Busy
	run.Listing = listing
	slices.SortStableFunc(run.Workloads, func(x, y *Judged) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name))
	})
	run.JudgeTook = time.Since(run.At)
	if *l.o.Config.Audit.Reports {
		if err = l.writeReports(ctx, run); err != nil && !errors.Is(err, ErrNoReportsAPI) {
			err = fmt.Errorf("writing the reports: %w", err)
		}
	}
	// The run's duration includes the writes: a run must fit in an interval.
	run.Took = time.Since(run.At)
	run.WriteTook = run.Took - run.JudgeTook
	l.metrics.publish(run)
	return run, err
}
