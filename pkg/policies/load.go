package policies

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
)

// Names a package must define to be a policy, and the METADATA key that sets its
// enforcement.
const (
	denyRule          = "deny"
	warnRule          = "warn"
	enforcementCustom = "enforcement"
)

// Limits on what a policy directory may hold. The directory is usually a ConfigMap
// volume (at most 1 MiB), so these only stop a mistaken mount (a whole data volume)
// from exhausting the webhook's memory.
const (
	maxFileBytes  = 4 << 20
	maxTotalBytes = 64 << 20
	maxFiles      = 10000
	maxDirDepth   = 16
)

// dataFileNames are the only JSON/YAML files loaded, as data at their directory's
// path: any other YAML in the directory (fixtures, Helm values, a README example)
// is not mistaken for policy data.
var dataFileNames = []string{"data.json", "data.yaml", "data.yml"}

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
	// Files are the policy's source files, as paths under the policy directory.
	Files []string
	// HasDeny and HasWarn report which of the two rules the package defines.
	HasDeny bool
	HasWarn bool

	path ast.Ref
}

// Problem is one reason a policy set was refused, located so that a user can fix it.
type Problem struct {
	// File is the file's path (the policy directory joined with its relative path),
	// or "" when the problem is not about one file.
	File string
	// Line is 1-based, or 0 when unknown.
	Line    int
	Message string
}

func (p Problem) String() string {
	switch {
	case p.File != "" && p.Line > 0:
		return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Message
	case p.File != "":
		return p.File + ": " + p.Message
	}
	return p.Message
}

// LoadError is a policy set that was refused. The engine keeps serving the previous
// set, so the error carries every problem at once: fixing them one reload at a time
// would be slow.
type LoadError struct {
	Dir      string
	Problems []Problem
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy set in %s refused", e.Dir)
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// snapshot is the policy directory's relevant files read into memory once, so that
// one load sees one consistent version of them (a ConfigMap update can land while
// we read) and so that an unchanged directory is recognised by its hash.
type snapshot struct {
	files fstest.MapFS
	// dirs are the directories visited, for the watcher.
	dirs []string
	hash string
}

// isPolicyFile decides which files a load reads.
func isPolicyFile(name string, withTests bool) bool {
	if strings.HasSuffix(name, ".rego") {
		return withTests || !strings.HasSuffix(name, "_test.rego")
	}
	return slices.Contains(dataFileNames, name)
}

// readSnapshot reads the policy files under root. Hidden entries (names starting
// with ".") are skipped: a ConfigMap volume keeps each version in a "..<timestamp>"
// directory behind a "..data" symlink, and the visible files are symlinks into it,
// so reading the hidden entries too would load everything twice. Symlinks are
// followed, which is how the visible files resolve.
func readSnapshot(root string, withTests bool) (*snapshot, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("reading policy directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("policy directory %s is not a directory", root)
	}
	s := &snapshot{files: fstest.MapFS{}}
	var total int
	var walk func(dir, rel string, depth int) error
	walk = func(dir, rel string, depth int) error {
		if depth > maxDirDepth {
			return fmt.Errorf("%s: directories nested deeper than %d (a symlink loop?)", dir, maxDirDepth)
		}
		s.dirs = append(s.dirs, dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			p := filepath.Join(dir, name)
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if fi.IsDir() {
				if err := walk(p, r, depth+1); err != nil {
					return err
				}
				continue
			}
			if !fi.Mode().IsRegular() || !isPolicyFile(name, withTests) {
				continue
			}
			if fi.Size() > maxFileBytes {
				return fmt.Errorf("%s: file larger than %d bytes", p, maxFileBytes)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			total += len(data)
			if total > maxTotalBytes || len(s.files) >= maxFiles {
				return fmt.Errorf("%s: policy directory holds more than %d files or %d bytes", root, maxFiles, maxTotalBytes)
			}
			s.files[r] = &fstest.MapFile{Data: data, Mode: 0o444}
		}
		return nil
	}
	if err := walk(root, "", 0); err != nil {
		return nil, err
	}
	h := sha256.New()
	names := make([]string, 0, len(s.files))
	for n := range s.files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(s.files[n].Data))
		h.Write(s.files[n].Data)
	}
	s.hash = hex.EncodeToString(h.Sum(nil))
	return s, nil
}

// compiled is a parsed and compiled policy tree: what serving and `policy test`
// share.
type compiled struct {
	compiler *ast.Compiler
	store    storage.Store
	modules  map[string]*ast.Module
}

// regoVersion is the only Rego syntax accepted: v1 (if, contains, :=).
const regoVersion = ast.RegoV1

// parseSnapshot parses every file of a snapshot: Rego modules (with their METADATA
// annotations) and data documents, each at its directory's path under data.
func parseSnapshot(dir string, snap *snapshot) (map[string]*ast.Module, storage.Store, error) {
	res, err := loader.NewFileLoader().
		WithFS(snap.files).
		WithRegoVersion(regoVersion).
		WithProcessAnnotation(true).
		WithCapabilities(Capabilities()).
		Filtered([]string{"."}, nil)
	if err != nil {
		return nil, nil, &LoadError{Dir: dir, Problems: problems(dir, err)}
	}
	store := inmem.NewFromObjectWithOpts(res.Documents,
		inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
	return res.ParsedModules(), store, nil
}

// newCompiler is the one compiler configuration, shared by serving and tests.
// Print statements are only kept for tests: the server has nowhere to show them.
func newCompiler(caps *ast.Capabilities, printStatements bool) *ast.Compiler {
	return ast.NewCompiler().
		WithCapabilities(caps).
		WithDefaultRegoVersion(regoVersion).
		WithEnablePrintStatements(printStatements)
}

// compileSnapshot parses and compiles a snapshot. Data documents that overlap a
// rule's path are refused here, not at evaluation.
func compileSnapshot(ctx context.Context, dir string, snap *snapshot) (*compiled, error) {
	modules, store, err := parseSnapshot(dir, snap)
	if err != nil {
		return nil, err
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening policy data: %w", err)
	}
	defer store.Abort(ctx, txn)
	compiler := newCompiler(Capabilities(), false).WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn))
	if compiler.Compile(modules); compiler.Failed() {
		return nil, &LoadError{Dir: dir, Problems: problems(dir, compiler.Errors)}
	}
	return &compiled{compiler: compiler, store: store, modules: modules}, nil
}

// discover finds the policies of a compiled tree: every package that defines deny
// or warn. Their METADATA is read and checked here, so that a typo in an
// enforcement mode refuses the set instead of silently enforcing "deny".
func discover(dir string, c *compiled) ([]*Policy, error) {
	names := make([]string, 0, len(c.modules))
	for n := range c.modules {
		names = append(names, n)
	}
	slices.Sort(names)
	byID := map[string]*Policy{}
	var order []string
	var probs []Problem
	for _, name := range names {
		mod := c.compiler.Modules[name]
		if mod == nil {
			continue
		}
		id := strings.TrimPrefix(mod.Package.Path.String(), "data.")
		hasDeny, hasWarn := false, false
		for _, r := range mod.Rules {
			rule, ok := policyRuleName(r)
			if !ok {
				continue
			}
			if r.Head.Key == nil && isBooleanTerm(r.Head.Value) {
				probs = append(probs, Problem{File: filepath.Join(dir, name), Line: r.Location.Row, Message: fmt.Sprintf(
					"%s must be a set of messages (%s contains msg if { ... }), not a boolean", rule, rule)})
				continue
			}
			hasDeny = hasDeny || rule == denyRule
			hasWarn = hasWarn || rule == warnRule
		}
		if _, builtin := admission.LookupRule(id); builtin && (hasDeny || hasWarn) {
			probs = append(probs, Problem{File: filepath.Join(dir, name), Line: mod.Package.Location.Row, Message: fmt.Sprintf(
				"package %s takes the id of a built-in rule; rename the package", id)})
			continue
		}
		p := byID[id]
		if p == nil {
			p = &Policy{ID: id, Enforcement: admission.EnforcementDeny, path: mod.Package.Path}
		}
		p.HasDeny = p.HasDeny || hasDeny
		p.HasWarn = p.HasWarn || hasWarn
		p.Files = append(p.Files, filepath.Join(dir, name))
		for _, a := range mod.Annotations {
			if a.Scope != "package" {
				continue
			}
			if p.Title == "" {
				p.Title = a.Title
			}
			if p.Description == "" {
				p.Description = a.Description
			}
			if v, ok := a.Custom[enforcementCustom]; ok {
				e, err := parseEnforcement(v)
				if err != nil {
					probs = append(probs, Problem{File: filepath.Join(dir, name), Line: locationRow(a.Location), Message: err.Error()})
					continue
				}
				p.Enforcement = e
			}
		}
		if byID[id] == nil {
			byID[id] = p
			order = append(order, id)
		}
	}
	if len(probs) > 0 {
		return nil, &LoadError{Dir: dir, Problems: probs}
	}
	slices.Sort(order)
	out := make([]*Policy, 0, len(order))
	for _, id := range order {
		if p := byID[id]; p.HasDeny || p.HasWarn {
			out = append(out, p)
		}
	}
	return out, nil
}

// policyRuleName reports whether a rule defines deny or warn at the top of its
// package (deny contains msg if ..., deny := {...}).
func policyRuleName(r *ast.Rule) (string, bool) {
	ref := r.Head.Ref()
	if len(ref) != 1 {
		return "", false
	}
	v, ok := ref[0].Value.(ast.Var)
	if !ok || (v != denyRule && v != warnRule) {
		return "", false
	}
	return string(v), true
}

func isBooleanTerm(t *ast.Term) bool {
	if t == nil {
		return false
	}
	_, ok := t.Value.(ast.Boolean)
	return ok
}

func parseEnforcement(v any) (admission.Enforcement, error) {
	s, _ := v.(string)
	switch e := admission.Enforcement(s); e {
	case admission.EnforcementDeny, admission.EnforcementWarn, admission.EnforcementDryRun:
		return e, nil
	}
	return "", fmt.Errorf("METADATA custom.%s must be one of %s, %s, %s; got %v", enforcementCustom,
		admission.EnforcementDeny, admission.EnforcementWarn, admission.EnforcementDryRun, v)
}

func locationRow(l *ast.Location) int {
	if l == nil {
		return 0
	}
	return l.Row
}

// problems flattens OPA's loader and compiler errors into located problems, and
// explains the ones a policy author would otherwise find cryptic.
func problems(dir string, err error) []Problem {
	var out []Problem
	var add func(err error)
	add = func(err error) {
		var astErrs ast.Errors
		var astErr *ast.Error
		var loadErrs loader.Errors
		switch {
		case errors.As(err, &loadErrs):
			for _, e := range loadErrs {
				add(e)
			}
		case errors.As(err, &astErrs):
			for _, e := range astErrs {
				add(e)
			}
		case errors.As(err, &astErr):
			p := Problem{Message: explain(astErr.Code + ": " + astErr.Message)}
			if astErr.Location != nil {
				p.File = filepath.Join(dir, astErr.Location.File)
				p.Line = astErr.Location.Row
			}
			out = append(out, p)
		default:
			// JSON and YAML errors name the file first ("data.yaml: ...").
			msg := err.Error()
			p := Problem{Message: msg}
			if file, rest, ok := strings.Cut(msg, ": "); ok && !strings.ContainsAny(file, " \n") {
				p.File, p.Message = filepath.Join(dir, file), rest
			}
			out = append(out, p)
		}
	}
	add(err)
	return out
}

// explain adds the reason to "undefined function http.send": the function exists
// in OPA, it is disabled here on purpose.
func explain(msg string) string {
	for _, b := range disabledBuiltins {
		if strings.Contains(msg, "undefined function "+b) {
			return msg + " (" + b + " is disabled in kueue-guard policies: policies cannot reach the network or the runtime environment)"
		}
	}
	return msg
}

// errNoDir is returned when no policy directory is configured.
var errNoDir = errors.New("no policy directory configured")
