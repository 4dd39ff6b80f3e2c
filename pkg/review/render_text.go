package review

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
)

// Output formats (-o).
const (
	FormatText  = "text"
	FormatJSON  = "json"
	FormatJUnit = "junit"
	FormatSARIF = "sarif"
)

// Formats lists the output formats, for flag help and validation.
var Formats = []string{FormatText, FormatJSON, FormatJUnit, FormatSARIF}

// What --show-mutations shows.
const (
	ShowPatches   = "patches"
	ShowManifests = "manifests"
)

// RenderOptions say how a report is rendered.
type RenderOptions struct {
	// Color adds ANSI colours (text only); the CLI sets it only on a terminal.
	Color bool
	// ShowMutations is "", patches or manifests (text only; JSON always carries
	// the patch, and the mutated object when the review computed it).
	ShowMutations string
	// ToolVersion is kueue-guard's version, for SARIF.
	ToolVersion string
	// Command names the report in the text header; "" is "kueue-guard review".
	Command string
}

// Render writes the report in a format.
func Render(w io.Writer, rep *Report, format string, o RenderOptions) error {
	switch format {
	case FormatText, "":
		return RenderText(w, rep, o)
	case FormatJSON:
		return RenderJSON(w, rep)
	case FormatJUnit:
		return RenderJUnit(w, rep)
	case FormatSARIF:
		return RenderSARIF(w, rep, o.ToolVersion)
	}
	return fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// RenderJSON writes the report as indented JSON (the documented schema).
func RenderJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// ANSI colours of the text report.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBlue   = "\x1b[34m"
	ansiCyan   = "\x1b[36m"
)

type textWriter struct {
	w     io.Writer
	color bool
	err   error
}

func (t *textWriter) paint(code, s string) string {
	if !t.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// statusLabel renders an object's status.
func (t *textWriter) statusLabel(o *Object) string {
	switch o.Status {
	case StatusAllowed:
		label := "allowed"
		var extra []string
		if len(o.Warnings) > 0 {
			extra = append(extra, plural(len(o.Warnings), "warning", "warnings"))
		}
		if len(o.Patch) > 0 {
			extra = append(extra, "patched")
		}
		if len(extra) > 0 {
			label += " (" + strings.Join(extra, ", ") + ")"
		}
		if len(o.Warnings) > 0 {
			return t.paint(ansiYellow, label)
		}
		return t.paint(ansiGreen, label)
	case StatusDenied:
		return t.paint(ansiBold+ansiRed, "DENIED")
	case StatusError:
		return t.paint(ansiBold+ansiRed, "ERROR") + ": " + o.Reason
	case StatusSkipped:
		return t.paint(ansiDim, "skipped: "+o.Reason)
	case StatusClusterState:
		return t.paint(ansiBlue, "cluster state")
	}
	return o.Status
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// RenderText writes the report for people: grouped by file and object, each
// finding with its rule, message, field and line, then a summary line.
func RenderText(w io.Writer, rep *Report, o RenderOptions) error {
	t := &textWriter{w: w, color: o.Color}
	t.header(rep, o.Command)
	files, groups := rep.byFile()
	for _, f := range files {
		t.printf("\n%s\n", t.paint(ansiBold, f))
		for _, e := range rep.errorsOf(f) {
			t.printf("  %s %s\n", t.paint(ansiBold+ansiRed, "ERROR"), strings.TrimPrefix(e.Error(), f+": "))
		}
		for _, obj := range groups[f] {
			t.object(obj, o)
		}
	}
	if len(rep.Notes) > 0 {
		t.printf("\n%s\n", t.paint(ansiBold, "Notes"))
		for _, n := range rep.Notes {
			t.printf("  - %s\n", n)
		}
	}
	t.printf("\n%s\n", t.summary(rep))
	return t.err
}

func (t *textWriter) header(rep *Report, command string) {
	if command == "" {
		command = "kueue-guard review"
	}
	c := rep.Context
	state := "none"
	switch c.ClusterState {
	case StateFile:
		state = c.ClusterStateSource + " (file)"
	case StateLive:
		state = c.ClusterStateSource + " (live cluster)"
	}
	policies := "none"
	if c.PolicyDirectory != "" {
		policies = fmt.Sprintf("%s (%s)", c.PolicyDirectory, plural(len(c.Policies), "policy", "policies"))
	}
	config := "defaults"
	if c.Config != "" {
		config = c.Config
	}
	t.printf("%s\n", t.paint(ansiBold, command))
	t.printf("  cluster state: %s\n", state)
	t.printf("  policies:      %s\n", policies)
	t.printf("  config:        %s (installProfile %s)\n", config, c.InstallProfile)
	t.printf("  user:          %q, groups %s\n", c.User.Username, strings.Join(c.User.Groups, ", "))
}

func (t *textWriter) object(o *Object, ro RenderOptions) {
	t.printf("  %s (%s): %s\n", t.paint(ansiBold, o.Ref()), o.Source.Position(), t.statusLabel(o))
	if d := o.Defaulted; d != nil {
		msg := fmt.Sprintf("LocalQueue %s (%s)", d.LocalQueue, queueSourceWhy(d.Source))
		if d.PriorityClass != "" {
			msg += ", priority class " + d.PriorityClass
		}
		t.line("queue", ansiCyan, msg)
	}
	for _, f := range o.Findings {
		code := ansiYellow
		if f.Enforcement == string(admission.EnforcementDeny) {
			code = ansiRed
		} else if f.Enforcement == string(admission.EnforcementDryRun) {
			code = ansiDim
		}
		t.line(f.Enforcement, code, fmt.Sprintf("[%s] %s", f.Rule, f.Message))
		// A workload read from a cluster has no lines: the field alone.
		var where string
		switch {
		case f.Line > 0 && f.Field != "":
			where = fmt.Sprintf("%s (line %d)", f.Field, f.Line)
		case f.Line > 0:
			where = fmt.Sprintf("line %d", f.Line)
		default:
			where = f.Field
		}
		if where != "" {
			t.printf("  %s  %s\n", strings.Repeat(" ", 10), t.paint(ansiDim, "at "+where))
		}
	}
	if ro.ShowMutations == ShowPatches {
		for _, op := range o.Patch {
			v, _ := json.Marshal(op.Value)
			text := op.Operation + " " + op.Path
			if op.Operation != "remove" {
				text += " " + string(v)
			}
			t.line("patch", ansiCyan, text)
		}
	}
	for _, n := range o.Notes {
		t.line("note", ansiDim, n)
	}
	if p := o.Placement; p != nil {
		t.placement(p)
	}
	if ro.ShowMutations == ShowManifests && o.Mutated != nil && len(o.Patch) > 0 {
		y, err := yaml.Marshal(o.Mutated)
		if err == nil {
			t.line("mutated", ansiCyan, "")
			for l := range strings.SplitSeq(strings.TrimRight(string(y), "\n"), "\n") {
				t.printf("      %s\n", l)
			}
		}
	}
}

// line prints one labelled line of an object, "    deny      message".
func (t *textWriter) line(label, code, text string) {
	if text == "" {
		t.printf("    %s\n", t.paint(code, label))
		return
	}
	t.printf("    %s%s%s\n", t.paint(code, label), strings.Repeat(" ", max(1, 10-len(label))), text)
}

func (t *textWriter) placement(p *Placement) {
	parts := []string{"namespace " + p.Namespace.Name + stateSuffix(p.Namespace.State)}
	if lq := p.LocalQueue; lq != nil {
		s := "LocalQueue " + lq.Name + stateSuffix(lq.State) + " [" + lq.Why + "]"
		if lq.StopPolicy != "" {
			s += " stopPolicy " + lq.StopPolicy
		}
		parts = append(parts, s)
	}
	if cq := p.ClusterQueue; cq != nil {
		s := "ClusterQueue " + cq.Name + stateSuffix(cq.State)
		if cq.Cohort != "" {
			s += " [cohort " + cq.Cohort + "]"
		}
		if cq.StopPolicy != "" {
			s += " stopPolicy " + cq.StopPolicy
		}
		parts = append(parts, s)
	}
	t.line("where", ansiBlue, strings.Join(parts, " → "))
	if pc := p.PriorityClass; pc != nil {
		s := "priority class " + pc.Name + stateSuffix(pc.State)
		if pc.Value != nil {
			s += fmt.Sprintf(" (value %d)", *pc.Value)
		}
		t.line("", "", s)
	}
	if len(p.TotalRequests) > 0 {
		var reqs []string
		for _, k := range sortedKeys(p.TotalRequests) {
			reqs = append(reqs, k+" "+p.TotalRequests[k])
		}
		t.line("", "", "requests "+strings.Join(reqs, ", "))
	}
	if p.AdmitsAtOnce != "" {
		t.line("", "", "Kueue admits "+p.AdmitsAtOnce+" at a time: each flavor below must hold that much")
	}
	for _, f := range p.Flavors {
		verdict := "cannot hold it"
		if f.Fits {
			verdict = "can hold it"
		}
		var res []string
		for _, r := range f.Resources {
			res = append(res, fmt.Sprintf("%s %s of %s", r.Resource, r.Requested, r.Capacity))
		}
		t.line("", "", fmt.Sprintf("flavor %s%s: %s (%s)", f.Name, stateSuffix(f.State), verdict, strings.Join(res, ", ")))
	}
	t.line("", "", p.Verdict+": "+p.Reason)
}

// stateSuffix marks objects that are not plainly in the cluster state.
func stateSuffix(state string) string {
	switch state {
	case KnownManifest:
		return " (from the manifests)"
	case KnownMissing:
		return " (missing)"
	case KnownUnknown:
		return " (unknown)"
	}
	return ""
}

func (t *textWriter) summary(rep *Report) string {
	s := rep.Summary
	parts := []string{
		plural(s.Allowed, "allowed", "allowed") + fmt.Sprintf(" (%d with warnings, %d patched)", countAllowed(rep, func(o *Object) bool {
			return len(o.Warnings) > 0
		}), countAllowed(rep, func(o *Object) bool { return len(o.Patch) > 0 })),
		plural(s.Denied, "denied", "denied"),
		plural(s.Skipped, "skipped", "skipped"),
		plural(s.ClusterState, "cluster state", "cluster state"),
	}
	if s.Errors > 0 {
		parts = append(parts, plural(s.Errors, "object error", "object errors"))
	}
	if s.InputErrors > 0 {
		parts = append(parts, plural(s.InputErrors, "input error", "input errors"))
	}
	head := fmt.Sprintf("Summary: %s in %s: %s.", plural(s.Objects, "object", "objects"), plural(s.Files, "file", "files"),
		strings.Join(parts, ", "))
	var verdict string
	switch rep.Result {
	case ResultAllowed:
		verdict = t.paint(ansiBold+ansiGreen, "Result: allowed (exit 0).")
	case ResultDenied:
		verdict = t.paint(ansiBold+ansiRed, fmt.Sprintf("Result: denied (exit 1): %s.", objectList(rep, func(o *Object) bool {
			return o.Status == StatusDenied
		})))
	case ResultWarned:
		verdict = t.paint(ansiBold+ansiRed, fmt.Sprintf("Result: warnings (exit 1, --fail-on-warn): %s.", objectList(rep, func(o *Object) bool {
			return len(o.Warnings) > 0
		})))
	default:
		verdict = t.paint(ansiBold+ansiRed, "Result: input errors (exit 2): fix them and review again.")
	}
	return head + "\n" + verdict
}

// countAllowed counts the allowed objects for which f holds.
func countAllowed(rep *Report, f func(*Object) bool) int {
	n := 0
	for _, o := range rep.Objects {
		if o.Status == StatusAllowed && f(o) {
			n++
		}
	}
	return n
}

// objectList names the objects for which f holds (at most a few).
func objectList(rep *Report, f func(*Object) bool) string {
	var names []string
	for _, o := range rep.Objects {
		if f(o) {
			names = append(names, o.Ref())
		}
	}
	slices.Sort(names)
	const most = 5
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}
