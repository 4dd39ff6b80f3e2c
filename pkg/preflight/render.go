package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Output formats.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// Formats are the valid -o values.
var Formats = []string{FormatText, FormatJSON}

// RenderJSON writes the report as one JSON document.
func RenderJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// RenderText writes the report for a terminal: one line per check, its
// findings below it with their fixes, and with explain the check's reason and
// its documentation.
func RenderText(w io.Writer, r *Report, explain bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "preflight for a move to %s (cluster %s)\n\n", r.Target.describe(), r.Cluster)
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.ID))
	}
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-5s %-*s  %s\n", strings.ToUpper(string(c.Status)), width, c.ID, c.Summary)
		indent := strings.Repeat(" ", 6)
		for _, f := range c.Findings {
			line := f.Message
			if f.Object != "" {
				line = f.Object + ": " + line
			}
			fmt.Fprintf(&b, "%s[%s] %s\n", indent, f.Status, line)
			if f.Fix != "" {
				fmt.Fprintf(&b, "%s  fix: %s\n", indent, f.Fix)
			}
		}
		if explain {
			fmt.Fprintf(&b, "%swhy: %s\n%ssee: %s\n", indent, c.Why, indent, c.Doc)
		}
	}
	fmt.Fprintf(&b, "\nresult: %s (%s)\n", strings.ToUpper(string(r.Result)), r.Counts)
	if !explain && r.Result != Pass {
		fmt.Fprintf(&b, "run with --explain for why each check matters, or see %s\n", DocPage)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (c Counts) String() string {
	parts := []string{plural(c.Pass, "passed")}
	if c.Warn > 0 {
		parts = append(parts, plural(c.Warn, "warned"))
	}
	if c.Fail > 0 {
		parts = append(parts, plural(c.Fail, "failed"))
	}
	if c.Error > 0 {
		parts = append(parts, plural(c.Error, "could not be checked"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string { return fmt.Sprintf("%d %s", n, what) }
