// Package preflight checks a live cluster before it moves to another Kueue
// install: `kueue-guard preflight --target managed|oss`. It reads (never
// writes) what the switch depends on — the Kubernetes version, every Kueue
// controller manager running in any namespace, the queued workloads of
// integrations the target does not support, the Kueue Configuration settings
// in use, the webhook order between kueue-guard and Kueue, and kueue-guard's
// own configuration — and says of each whether it passes, what it found, and
// what to do.
//
// Gathering (gather.go) is separate from judging (checks.go): the checks are
// pure functions of what was read, so that each verdict can be tested on its
// own, and a part that could not be read fails only its own check.
package preflight

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// Target is the Kueue install the cluster moves to.
type Target string

const (
	// TargetManaged is a platform's managed Kueue (such as AKS's extension): a
	// cluster singleton with a fixed set of integrations and its own
	// Configuration.
	TargetManaged Target = "managed"
	// TargetOSS is upstream Kueue installed by the admins (Helm or manifests).
	TargetOSS Target = "oss"
)

// Targets are the valid --target values.
var Targets = []Target{TargetManaged, TargetOSS}

// MinKubernetes is the oldest Kubernetes each target runs on: the managed
// extension's prerequisite (AKS 1.34 or later), and upstream Kueue's (v0.19
// requires 1.29 or newer).
var MinKubernetes = map[Target]*version.Version{
	TargetManaged: version.MustParseGeneric("1.34"),
	TargetOSS:     version.MustParseGeneric("1.29"),
}

// Supports reports whether the target's Kueue can manage an integration at
// all: the managed install only its fixed set, upstream Kueue every one (once
// its Configuration enables it).
func (t Target) Supports(in *integrations.Integration) bool {
	return t != TargetManaged || in.Managed
}

func (t Target) describe() string {
	if t == TargetManaged {
		return "the managed Kueue install"
	}
	return "upstream (OSS) Kueue"
}

// ParseTarget validates a --target value.
func ParseTarget(s string) (Target, error) {
	for _, t := range Targets {
		if string(t) == s {
			return t, nil
		}
	}
	if s == "" {
		return "", fmt.Errorf("--target is required: %s or %s", TargetManaged, TargetOSS)
	}
	return "", fmt.Errorf("--target %q: must be %s or %s", s, TargetManaged, TargetOSS)
}

// Status is a check's verdict.
type Status string

const (
	// Pass: nothing stands in the way.
	Pass Status = "pass"
	// Warn: the switch works, but something needs the admin's attention.
	Warn Status = "warn"
	// Fail: the switch fails, or workloads stop being managed, until the fix is
	// applied.
	Fail Status = "fail"
	// Error: the check could not be made (the cluster could not be read).
	Error Status = "error"
)

// rank orders statuses from best to worst; a check takes its worst finding's.
func (s Status) rank() int {
	switch s {
	case Warn:
		return 1
	case Error:
		return 2
	case Fail:
		return 3
	}
	return 0
}

func worse(a, b Status) Status {
	if a == "" || b.rank() > a.rank() {
		return b
	}
	return a
}

// Check IDs: stable names, the anchors of their sections in
// docs/managed-kueue.md.
const (
	CheckKubernetesVersion    = "kubernetes-version"
	CheckKueueControllers     = "kueue-controllers"
	CheckKueueVersion         = "kueue-version"
	CheckUnsupportedWorkloads = "unsupported-workloads"
	CheckKueueConfiguration   = "kueue-configuration"
	CheckWebhookOrder         = "webhook-order"
	CheckKueueGuardProfile    = "kueue-guard-profile"
)

// DocPage is where every check is explained, each under a heading named by
// its ID.
const DocPage = "docs/managed-kueue.md"

// Finding is one thing a check found: an object and what is wrong with it, or
// a setting.
type Finding struct {
	Status Status `json:"status"`
	// Object names what was found ("Deployment kueue-system/kueue-controller-manager").
	Object string `json:"object,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Fix says what to do, as a command where there is one.
	Fix string `json:"fix,omitempty"`
}

// Check is one check's verdict.
type Check struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status Status `json:"status"`
	// Summary says what the check found, in one line.
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings,omitempty"`
	// Doc links to the check's explanation.
	Doc string `json:"doc"`
	// Why is the check's reason, printed with --explain.
	Why string `json:"-"`
}

func (c *Check) add(f Finding) {
	c.Findings = append(c.Findings, f)
	c.Status = worse(c.Status, f.Status)
}

// Report is the result of a preflight run.
type Report struct {
	Target  Target  `json:"target"`
	Cluster string  `json:"cluster"`
	Result  Status  `json:"result"`
	Checks  []Check `json:"checks"`
	Counts  Counts  `json:"counts"`
}

// Counts are how many checks ended with each status.
type Counts struct {
	Pass  int `json:"pass"`
	Warn  int `json:"warn"`
	Fail  int `json:"fail"`
	Error int `json:"error"`
}

// Exit codes of `kueue-guard preflight`.
const (
	// ExitPass: every check passed (warnings allowed).
	ExitPass = 0
	// ExitFail: a check failed.
	ExitFail = 1
	// ExitError: bad usage, or a check could not be made and none failed.
	ExitError = 2
)

// ExitCode is the report's exit code: 1 when any check failed — the switch
// would break something, whatever the checks that could not run would have
// said — else 2 when one could not be made, else 0.
func (r *Report) ExitCode() int {
	switch {
	case r.Counts.Fail > 0:
		return ExitFail
	case r.Counts.Error > 0:
		return ExitError
	}
	return ExitPass
}

// Judge makes every check of the target over what was read.
func Judge(target Target, s *State) *Report {
	r := &Report{Target: target, Cluster: s.Host}
	for _, check := range []func(Target, *State) Check{
		checkKubernetesVersion, checkKueueControllers, checkKueueVersion, checkUnsupportedWorkloads,
		checkKueueConfiguration, checkWebhookOrder, checkKueueGuardProfile,
	} {
		c := check(target, s)
		c.Doc = DocPage + "#" + c.ID
		r.Checks = append(r.Checks, c)
		r.Result = worse(r.Result, c.Status)
		switch c.Status {
		case Pass:
			r.Counts.Pass++
		case Warn:
			r.Counts.Warn++
		case Fail:
			r.Counts.Fail++
		case Error:
			r.Counts.Error++
		}
	}
	return r
}
