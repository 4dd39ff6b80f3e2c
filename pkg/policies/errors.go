package policies

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
)

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
			p := Problem{Message: explain(astErr.Code+": "+astErr.Message) + schemaDetail(astErr)}
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

// explain adds the reason to "undefined function time.now_ns": the function
// exists in OPA, and kueue-guard does not offer it on purpose.
func explain(msg string) string {
	const undefined = "undefined function "
	_, after, ok := strings.Cut(msg, undefined)
	if !ok {
		return msg
	}
	name := after
	if j := strings.IndexAny(name, " \n:"); j >= 0 {
		name = name[:j]
	}
	if !ast.CapabilitiesForThisVersion().ContainsBuiltin(name) {
		return msg
	}
	if slices.Contains(optInBuiltins, name) {
		return msg + " (" + name + " is not deterministic or not bounded, so kueue-guard offers it only when an admin lists it in policies.allowBuiltins)"
	}
	return msg + " (" + name + " is not offered to kueue-guard policies: they cannot reach the network or the runtime environment, and call only deterministic, bounded built-ins)"
}

// errNoDir is returned when no policy directory is configured.
var errNoDir = errors.New("no policy directory configured")
