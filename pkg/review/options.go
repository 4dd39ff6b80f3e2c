package review

import (
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/kueue-guard/kueue-guard/pkg/config"
)

// DefaultNamespace is where namespaced objects without metadata.namespace go,
// as with kubectl's default context.
const DefaultNamespace = "default"

// AuthenticatedGroup is the group the API server gives every authenticated user;
// the reviewer's user always has it, as a real requester would.
const AuthenticatedGroup = "system:authenticated"

// Options configure a review.
type Options struct {
	// Config is the kueue-guard configuration the webhook runs with; nil means
	// config.Default().
	Config *config.Configuration
	// ConfigFile names the configuration in reports ("" for the defaults).
	ConfigFile string
	// PolicyDir is the Rego policy directory; "" runs no policies.
	PolicyDir string
	// State is the cluster the manifests are applied to; nil means none (queue
	// checks then say "unknown"). The review adds the manifests' own Namespaces
	// and queues to it.
	State *State
	// User is who creates the objects. AuthenticatedGroup is added when missing.
	User authenticationv1.UserInfo
	// DefaultNamespace is the namespace of namespaced objects that name none;
	// "" means DefaultNamespace.
	DefaultNamespace string
	// OwnNamespace is kueue-guard's own namespace, exempt as in the server.
	OwnNamespace string
	// Explain adds each workload's placement to the report.
	Explain bool
	// Simulate adds Kueue's verdict on each allowed workload (simulate): the
	// State must be a cluster's, with its Workloads.
	Simulate bool
	// Mutated adds each object with its patch applied to the report.
	Mutated bool
	// FailOnWarn makes an object with warnings fail the review: result
	// ResultWarned, exit code ExitDenied (when nothing worse happened).
	FailOnWarn bool
}

// SetupError is a review that could not start: a configuration or policy
// directory that does not load. The CLI exits with ExitInputError.
type SetupError struct {
	// Err names the file (and line) that did not load.
	Err error
}

// Error implements error.
func (e *SetupError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *SetupError) Unwrap() error { return e.Err }
