package policies

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
)

// Names a package must define to be a policy, and the METADATA key that sets its
// enforcement.
const (
	denyRule          = "deny"
	warnRule          = "warn"
	enforcementCustom = "enforcement"
	severityCustom    = "severity"
)

// Severities a policy's custom.severity may name (OpenReports' result
// severities); DefaultSeverity when it names none.
var Severities = []string{"critical", "high", "medium", "low", "info"}

// DefaultSeverity is a policy's severity without custom.severity.
const DefaultSeverity = "medium"

// Policy describes one policy of a loaded set: what reports and messages say about
// it, and how its results are enforced.
type Policy struct {
	// ID is the package path without "data.", e.g. kueue_guard.fits_cluster_queue;
	// violations carry it as their rule.
	ID string
	// Title and Description come from the package's METADATA.
	Title       string
	Description string
	// Enforcement is METADATA custom.enforcement: what a deny result does.
	Enforcement admission.Enforcement
	// Severity is METADATA custom.severity (one of Severities), for the
	// audit's reports; DefaultSeverity when unset.
	Severity string
	// Files are the policy's source files, as paths under the policy directory.
	Files []string
	// HasDeny and HasWarn report which of the two rules the package defines.
	HasDeny bool
	HasWarn bool
	// Match is METADATA custom.match: the requests the policy applies to; nil
	// applies to every request the policy step judges.
	Match *Match

	path ast.Ref
	// denyDirect and warnDirect: the rule is defined only by multi-value
	// rules (see multiValueOnly), so the query reads it without a comprehension.
	denyDirect, warnDirect bool
}
