package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
	"github.com/kueue-guard/kueue-guard/pkg/live"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// Report naming and labels.
const (
	// ReportName is the name of kueue-guard's Report in each namespace.
	ReportName = "kueue-guard"
	// Source is the Reports' source, as OpenReports consumers group them.
	Source = "kueue-guard"
	// ManagedByLabel marks the Reports kueue-guard writes (and may delete).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "kueue-guard"
	// RunAnnotation is the run the Report is from (RFC 3339) and the
	// replica that wrote it.
	RunAnnotation       = "kueue-guard.io/audit-run"
	AuditedByAnnotation = "kueue-guard.io/audited-by"
	// allRules is the rule of a workload's pass result: every check passed.
	allRules = "all"
)

// ErrNoReportsAPI is a run that could not write Reports because the cluster
// does not serve openreports.io/v1alpha1: the results are in the metrics only.
var ErrNoReportsAPI = errors.New("the cluster does not serve openreports.io/v1alpha1 Reports (install the OpenReports CRDs, or set audit.reports: false)")

// AddToScheme adds the Report types.
func AddToScheme(s *runtime.Scheme) error { return openreports.Install(s) }

// reportsFor builds one Report per namespace with audited workloads: a result
// per finding (fail for a denial, warn for a warning or a dryrun finding), a
// pass result for a workload without any, an error result for one the
// pipeline could not judge. The summary counts every result; at most max are
// kept (failures first).
func (l *Loop) reportsFor(run *Run) map[string]*openreports.Report {
	out := map[string]*openreports.Report{}
	ts := metav1.Timestamp{Seconds: run.At.Unix()}
	for _, j := range run.Workloads {
		r, ok := out[j.Namespace]
		if !ok {
			r = &openreports.Report{
				ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: ReportName,
					Labels: map[string]string{ManagedByLabel: managedBy},
					Annotations: map[string]string{RunAnnotation: run.At.UTC().Format("2006-01-02T15:04:05Z"),
						AuditedByAnnotation: l.o.Identity}},
				Source: Source,
				Scope:  &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: j.Namespace},
			}
			out[j.Namespace] = r
		}
		subject := []corev1.ObjectReference{{APIVersion: j.APIVersion, Kind: j.Kind, Namespace: j.Namespace, Name: j.Name, UID: j.UID}}
		add := func(res openreports.ReportResult) {
			res.Source, res.Timestamp, res.Subjects = Source, ts, subject
			r.Results = append(r.Results, res)
			switch res.Result {
			case ResultPass:
				r.Summary.Pass++
			case ResultFail:
				r.Summary.Fail++
			case ResultWarn:
				r.Summary.Warn++
			case ResultError:
				r.Summary.Error++
			}
		}
		switch {
		case j.Err != nil:
			add(openreports.ReportResult{Policy: "kueue-guard", Rule: allRules, Result: ResultError,
				Severity: policies.DefaultSeverity, Description: "kueue-guard could not judge this workload: " + j.Err.Error()})
		case len(j.Findings) == 0:
			add(openreports.ReportResult{Policy: "kueue-guard", Rule: allRules, Result: ResultPass,
				Description: "would be admitted if created now"})
		}
		for _, v := range j.Findings {
			props := map[string]string{"enforcement": string(v.Enforcement)}
			if v.Field != nil {
				props["field"] = fieldpath.String(v.Field)
			}
			add(openreports.ReportResult{Policy: v.Rule, Result: openreports.Result(findingResult(v)),
				Severity: openreports.ResultSeverity(l.o.Severity(v.Rule)), Scored: v.Enforcement != "dryrun",
				Description: v.Message, Properties: props})
		}
	}
	max := l.o.Config.Audit.MaxResultsPerReport
	for _, r := range out {
		// Failures first, then errors, warnings and passes, each in workload order.
		rank := map[openreports.Result]int{ResultFail: 0, ResultError: 1, ResultWarn: 2, ResultPass: 3}
		slices.SortStableFunc(r.Results, func(a, b openreports.ReportResult) int { return cmp.Compare(rank[a.Result], rank[b.Result]) })
		if max > 0 && len(r.Results) > max {
			r.Results = r.Results[:max]
			r.Configuration = &openreports.ReportConfiguration{Limits: openreports.Limits{MaxResults: max}}
		}
	}
	return out
}

// unchanged reports whether the Report already says what the run found: the
// same results, summary, limits and writer, whatever the runs' timestamps. A
// steady cluster then costs the API server no writes (and its watchers, such as
// a dashboard, no events); the audit-run annotation is the run that last
// changed the Report, and kueue_guard_audit_last_run_timestamp_seconds the last
// run.
func unchanged(old, r *openreports.Report) bool {
	if old.Annotations[AuditedByAnnotation] != r.Annotations[AuditedByAnnotation] ||
		old.Labels[ManagedByLabel] != r.Labels[ManagedByLabel] || old.Source != r.Source ||
		old.Summary != r.Summary || !equality.Semantic.DeepEqual(old.Scope, r.Scope) ||
		!equality.Semantic.DeepEqual(old.Configuration, r.Configuration) || len(old.Results) != len(r.Results) {
		return false
	}
	for i := range r.Results {
		a, b := old.Results[i], r.Results[i]
		a.Timestamp, b.Timestamp = metav1.Timestamp{}, metav1.Timestamp{}
		if !equality.Semantic.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

// reportGVK is the kind of the Reports written.
var reportGVK = schema.GroupVersion(openreports.GroupVersion).WithKind("Report")

// writeReports creates or replaces each namespace's Report and deletes
// kueue-guard's Reports in namespaces the run found no workload in.
func (l *Loop) writeReports(ctx context.Context, run *Run) error {
	want := l.reportsFor(run)
	existing, err := live.ListAs[openreports.Report](ctx, l.lister.reader, reportGVK,
		live.Options{LabelSelector: ManagedByLabel + "=" + managedBy})
	if errors.Is(err, live.ErrNotServed) {
		return ErrNoReportsAPI
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, old := range existing {
		if old.Name != ReportName {
			continue
		}
		// A run cut at audit.maxObjects has not seen every namespace: it
		// deletes nothing.
		if _, ok := want[old.Namespace]; ok || run.Listing.Truncated {
			continue
		}
		if err := l.o.Client.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting %s/%s: %w", old.Namespace, old.Name, err))
		} else {
			l.metrics.wrote("delete")
		}
	}
	byNS := map[string]*openreports.Report{}
	for _, old := range existing {
		byNS[old.Namespace] = old
	}
	for ns, r := range want {
		if old, ok := byNS[ns]; ok && old.Name == ReportName {
			if unchanged(old, r) {
				continue
			}
			r.ResourceVersion = old.ResourceVersion
			if err := l.o.Client.Update(ctx, r); err != nil {
				errs = append(errs, fmt.Errorf("updating %s/%s: %w", ns, r.Name, err))
			} else {
				l.metrics.wrote("update")
			}
			continue
		}
		err := l.o.Client.Create(ctx, r)
		if apierrors.IsAlreadyExists(err) {
			// Written by someone else meanwhile, or not ours: leave it.
			err = fmt.Errorf("a Report %s/%s not labelled %s=%s exists: kueue-guard leaves it alone", ns, r.Name, ManagedByLabel, managedBy)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("creating %s/%s: %w", ns, r.Name, err))
		} else {
			l.metrics.wrote("create")
		}
	}
	return errors.Join(errs...)
}
