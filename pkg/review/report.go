package review

import (
	"cmp"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
)

// Report identity. The JSON report (-o json) is a contract with the scripts that
// read it: fields are only ever added; a breaking change gets a new apiVersion.
const (
	ReportAPIVersion = "review.kueue-guard.io/v1alpha1"
	ReportKind       = "Review"
)

// Exit codes of `kueue-guard review`.
const (
	// ExitAllowed: every object is allowed (warnings allowed).
	ExitAllowed = 0
	// ExitDenied: at least one object would be denied or, with --fail-on-warn,
	// has warnings.
	ExitDenied = 1
	// ExitInputError: a usage error, or input that could not be read or reviewed.
	// It wins over ExitDenied: a review that could not read everything is not a
	// verdict on everything.
	ExitInputError = 2
)

// Results of the whole review and statuses of one object.
const (
	ResultAllowed = "allowed"
	ResultDenied  = "denied"
	// ResultWarned: nothing is denied but an object has warnings, and the
	// review was asked to fail on them (--fail-on-warn); the exit code is
	// ExitDenied's.
	ResultWarned = "warned"
	ResultError  = "error"

	// StatusAllowed: the checks ran and nothing denies the object (it may carry
	// warnings and a patch).
	StatusAllowed = "allowed"
	// StatusDenied: a violation with enforcement deny.
	StatusDenied = "denied"
	// StatusError: the object could not be reviewed (an unreadable state object,
	// a failure inside the pipeline).
	StatusError = "error"
	// StatusSkipped: nothing checks this object (not a Kueue workload or
	// controller kind, or an exempt namespace); Reason says which.
	StatusSkipped = "skipped"
	// StatusClusterState: a Namespace, LocalQueue, ClusterQueue, ResourceFlavor or
	// WorkloadPriorityClass of the manifests, added to the cluster state.
	StatusClusterState = "cluster-state"
)

// The checks an object went through, as Object.Checks names them.
const (
	// CheckWorkload: the webhook's workload paths, mutating then validating
	// (queue defaulting, integration guard, queue checks, Rego policies).
	CheckWorkload = "workload"
	// CheckControllers: the Kueue controller guard.
	CheckControllers = "controllers"
)

// Report is the result of one review; every output format renders it. Its JSON
// form is `-o json`.
type Report struct {
	// APIVersion and Kind identify the format (ReportAPIVersion, ReportKind) so
	// that a reader can refuse a version it does not know.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Result is allowed, denied, warned (--fail-on-warn) or error (input
	// errors), matching ExitCode.
	Result string `json:"result"`
	// ExitCode is the command's exit code, so a script reading the report
	// needs nothing else.
	ExitCode int `json:"exitCode"`
	// Context is what the review assumed.
	Context Context `json:"context"`
	// Summary counts objects by status, for a one-line verdict.
	Summary Summary `json:"summary"`
	// Notes are remarks about the whole review (no cluster state, ignored
	// fields of the state), in order.
	Notes []string `json:"notes"`
	// Errors are the inputs that could not be read.
	Errors []*InputError `json:"errors"`
	// Objects are every object read, in input order.
	Objects []*Object `json:"objects"`

	// rules describes the rules findings refer to (for SARIF and JUnit).
	rules map[string]RuleInfo
	// files are the files read, in order, including those without objects.
	files []string
}

// Context is what a review assumed: the cluster, the policies, the user.
type Context struct {
	// ClusterState is none, file or live.
	ClusterState string `json:"clusterState"`
	// ClusterStateSource is the state file or the live cluster's server.
	ClusterStateSource string `json:"clusterStateSource,omitempty"`
	// Config is the configuration file, or "" for the defaults.
	Config string `json:"config,omitempty"`
	// InstallProfile is the configuration's installProfile.
	InstallProfile string `json:"installProfile"`
	// PolicyDirectory is the Rego policy directory, or "" for none.
	PolicyDirectory string `json:"policyDirectory,omitempty"`
	// Policies are the ids of the loaded policies.
	Policies []string `json:"policies"`
	// User is who the objects are created as.
	User User `json:"user"`
}

// User is the requesting user every object is reviewed as.
type User struct {
	// Username and Groups are input.request.userInfo for the policies.
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

// Summary counts objects by status.
type Summary struct {
	// Files and Objects are what was read.
	Files   int `json:"files"`
	Objects int `json:"objects"`
	// Allowed, Denied, Errors, Skipped and ClusterState count objects by status.
	Allowed      int `json:"allowed"`
	Denied       int `json:"denied"`
	Errors       int `json:"errors"`
	Skipped      int `json:"skipped"`
	ClusterState int `json:"clusterState"`
	// Warned counts objects with at least one warning, allowed or denied.
	Warned int `json:"warned"`
	// Patched counts objects the mutating webhook would change, allowed or denied.
	Patched int `json:"patched"`
	// InputErrors counts Report.Errors.
	InputErrors int `json:"inputErrors"`
}

// Object is the review of one object.
type Object struct {
	// Source is where the object is written, for people and code-scanning UIs.
	Source Source `json:"source"`
	// APIVersion, Kind and Namespace identify the object; Namespace is the one
	// the request would have (-n for namespaced objects that name none).
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	// Name is the object's name, "<generateName>*" for a generated name, or ""
	// for an unnamed document the review skips.
	Name string `json:"name"`
	// Status is allowed, denied, error, skipped or cluster-state.
	Status string `json:"status"`
	// Reason explains a skipped, cluster-state or error status.
	Reason string `json:"reason,omitempty"`
	// Checks are the pipeline paths that ran: workload, controllers.
	Checks []string `json:"checks"`
	// Findings are every violation, whatever its enforcement, in pipeline order.
	Findings []Finding `json:"findings"`
	// Warnings are the admission warnings kubectl would print, verbatim.
	Warnings []string `json:"warnings"`
	// Patch is the mutating webhook's JSON patch (RFC 6902) against the object.
	Patch []jsonpatch.Operation `json:"patch"`
	// Defaulted says how the queue was chosen, when the webhook would choose it.
	Defaulted *Defaulted `json:"defaulted,omitempty"`
	// Notes are what the review could not know about this object (no cluster
	// state), stated instead of guessed.
	Notes []string `json:"notes"`
	// Mutated is the object with the patch applied (--show-mutations manifests).
	Mutated map[string]any `json:"mutated,omitempty"`
	// Placement is where the workload would land (--explain).
	Placement *Placement `json:"placement,omitempty"`
	// Simulation is Kueue's verdict on it (simulate).
	Simulation *Simulation `json:"simulation,omitempty"`

	manifest *Manifest
}

// GroupVersionKind is the object's kind.
func (o *Object) GroupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
}

// Ref renders "Kind namespace/name" (just "Kind" for an unnamed document).
func (o *Object) Ref() string {
	if o.Name == "" {
		return o.Kind
	}
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Finding is one violated rule.
type Finding struct {
	// Rule is a built-in rule name (kueue_guard.missing_local_queue, ...) or a policy id.
	Rule string `json:"rule"`
	// Enforcement is deny, warn or dryrun.
	Enforcement string `json:"enforcement"`
	// Field is the field path the finding is about, or "".
	Field string `json:"field,omitempty"`
	// Message is the rule's statement, as the webhook returns it.
	Message string `json:"message"`
	// Line is the line of Field in the file (of the object, when the field is
	// not in the file, e.g. a label the webhook would add).
	Line int `json:"line"`
}

// Defaulted is the queue the mutating webhook would set, and why.
type Defaulted struct {
	// LocalQueue and PriorityClass are the labels defaulting sets.
	LocalQueue    string `json:"localQueue"`
	PriorityClass string `json:"priorityClass,omitempty"`
	// Source is the kueue-guard.io/defaulted-by value: namespace-annotation,
	// rule/<name> or kueue-default-localqueue.
	Source string `json:"source"`
}

// RuleInfo describes a rule for formats that list rules (SARIF, JUnit).
type RuleInfo struct {
	// ID is the rule name or policy id findings carry.
	ID string
	// Title and Description come from a policy's METADATA, or the built-in table.
	Title       string
	Description string
	// Enforcement is the rule's default enforcement.
	Enforcement string
	// Policy reports a Rego policy (else a built-in rule).
	Policy bool
	// Files are a policy's source files under the policy directory.
	Files []string
}

// finish computes the summary, result and exit code; failOnWarn makes warnings
// fail the review.
func (rep *Report) finish(failOnWarn bool) {
	s := Summary{Files: len(rep.files), Objects: len(rep.Objects), InputErrors: len(rep.Errors)}
	for _, o := range rep.Objects {
		switch o.Status {
		case StatusAllowed:
			s.Allowed++
		case StatusDenied:
			s.Denied++
		case StatusError:
			s.Errors++
		case StatusSkipped:
			s.Skipped++
		case StatusClusterState:
			s.ClusterState++
		}
		if len(o.Warnings) > 0 {
			s.Warned++
		}
		if len(o.Patch) > 0 {
			s.Patched++
		}
	}
	rep.Summary = s
	switch {
	case s.InputErrors > 0 || s.Errors > 0:
		rep.Result, rep.ExitCode = ResultError, ExitInputError
	case s.Denied > 0:
		rep.Result, rep.ExitCode = ResultDenied, ExitDenied
	case failOnWarn && s.Warned > 0:
		rep.Result, rep.ExitCode = ResultWarned, ExitDenied
	default:
		rep.Result, rep.ExitCode = ResultAllowed, ExitAllowed
	}
}

// Rules are every rule the review could report (each built-in rule and each
// loaded policy) and any other id a finding names, sorted by id.
func (rep *Report) Rules() []RuleInfo {
	out := make([]RuleInfo, 0, len(rep.rules))
	for _, id := range sortedKeys(rep.rules) {
		out = append(out, rep.rules[id])
	}
	return out
}

// Files are the files the review read, in input order.
func (rep *Report) Files() []string { return append([]string(nil), rep.files...) }

// denials are an object's findings that deny it.
func (o *Object) denials() []Finding {
	var out []Finding
	for _, f := range o.Findings {
		if f.Enforcement == string(admission.EnforcementDeny) {
			out = append(out, f)
		}
	}
	return out
}

// byFile groups objects by file, files in input order.
func (rep *Report) byFile() ([]string, map[string][]*Object) {
	groups := map[string][]*Object{}
	for _, o := range rep.Objects {
		groups[o.Source.File] = append(groups[o.Source.File], o)
	}
	files := rep.files
	if files == nil {
		for _, o := range rep.Objects {
			if !slices.Contains(files, o.Source.File) {
				files = append(files, o.Source.File)
			}
		}
	}
	return files, groups
}

// errorsOf are the input errors of one file, in order.
func (rep *Report) errorsOf(file string) []*InputError {
	var out []*InputError
	for _, e := range rep.Errors {
		if e.File == file {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b *InputError) int { return cmp.Compare(a.Document, b.Document) })
	return out
}
