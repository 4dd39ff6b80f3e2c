package review

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnitTestSuites is the JUnit XML document `-o junit` writes: one test suite per
// file, one test case per object (and per input error), in the form CI systems
// (Jenkins, GitLab, GitHub test reporters) read. Exported so that tests and tools
// can parse a report back.
type JUnitTestSuites struct {
	// XMLName, Name and the counts are the standard testsuites attributes; the
	// counts add up the suites'.
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	// Suites are the files, in input order.
	Suites []JUnitTestSuite `xml:"testsuite"`
}

// JUnitTestSuite is one file.
type JUnitTestSuite struct {
	// Name is the file; the counts are its test cases'.
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	// Cases are the input errors, then the objects, in order.
	Cases []JUnitTestCase `xml:"testcase"`
}

// JUnitTestCase is one object: failed when denied, an error when unreadable,
// skipped when nothing checks it; warnings, notes and the patch are its output.
type JUnitTestCase struct {
	// Name is "Kind namespace/name" (or "document N" for an input error);
	// Classname is the file, which CI viewers group by.
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	// At most one of Failure (denied), Error (unreadable) and Skipped is set.
	Failure *JUnitProblem `xml:"failure,omitempty"`
	Error   *JUnitProblem `xml:"error,omitempty"`
	Skipped *JUnitSkipped `xml:"skipped,omitempty"`
	// SystemOut carries the source, warnings, queue choice, patch and notes.
	SystemOut string `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure or an error.
type JUnitProblem struct {
	// Message is the one-line summary, Type is denied, error or input-error,
	// and Text holds every finding with its field and line.
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped marks a skipped test case.
type JUnitSkipped struct {
	// Message says why nothing checked the object.
	Message string `xml:"message,attr"`
}

// JUnit builds the JUnit document of a report.
func JUnit(rep *Report) *JUnitTestSuites {
	out := &JUnitTestSuites{Name: "kueue-guard review"}
	files, groups := rep.byFile()
	for _, f := range files {
		s := JUnitTestSuite{Name: f}
		for _, e := range rep.errorsOf(f) {
			name := "file"
			if e.Document > 0 {
				name = fmt.Sprintf("document %d", e.Document)
			}
			s.Cases = append(s.Cases, JUnitTestCase{Name: name, Classname: f,
				Error: &JUnitProblem{Message: e.Message, Type: "input-error", Text: e.Error()}})
			s.Errors++
		}
		for _, o := range groups[f] {
			c := JUnitTestCase{Name: o.Ref(), Classname: f}
			var out []string
			switch o.Status {
			case StatusDenied:
				var rules, lines []string
				for _, d := range o.denials() {
					rules = append(rules, d.Rule)
					lines = append(lines, findingLine(d))
				}
				c.Failure = &JUnitProblem{Message: "denied by " + strings.Join(rules, ", "), Type: "denied",
					Text: strings.Join(lines, "\n")}
				s.Failures++
			case StatusError:
				c.Error = &JUnitProblem{Message: o.Reason, Type: "error", Text: o.Source.String() + ": " + o.Reason}
				s.Errors++
			case StatusSkipped:
				c.Skipped = &JUnitSkipped{Message: o.Reason}
				s.Skipped++
			case StatusAllowed:
				// With --fail-on-warn the review fails on warnings: so does the
				// object's test case, or CI would fail with every case green.
				if rep.Result == ResultWarned && len(o.Warnings) > 0 {
					c.Failure = &JUnitProblem{Message: fmt.Sprintf("%d warning(s) (--fail-on-warn)", len(o.Warnings)),
						Type: "warned", Text: strings.Join(o.Warnings, "\n")}
					s.Failures++
				}
			case StatusClusterState:
				out = append(out, o.Reason)
			}
			out = append(out, "source: "+o.Source.String())
			for _, f := range o.Findings {
				if f.Enforcement != "deny" {
					out = append(out, f.Enforcement+": "+findingLine(f))
				}
			}
			for _, w := range o.Warnings {
				out = append(out, "warning: "+w)
			}
			if d := o.Defaulted; d != nil {
				out = append(out, fmt.Sprintf("queue: LocalQueue %s (%s)", d.LocalQueue, queueSourceWhy(d.Source)))
			}
			for _, op := range o.Patch {
				out = append(out, "patch: "+op.Json())
			}
			for _, n := range o.Notes {
				out = append(out, "note: "+n)
			}
			if p := o.Placement; p != nil {
				out = append(out, "placement: "+p.Verdict+": "+p.Reason)
			}
			c.SystemOut = strings.Join(out, "\n")
			s.Cases = append(s.Cases, c)
		}
		s.Tests = len(s.Cases)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, s)
	}
	return out
}

// findingLine renders "[rule] message (field, line N)".
func findingLine(f Finding) string {
	where := fmt.Sprintf("line %d", f.Line)
	if f.Field != "" {
		where = f.Field + ", " + where
	}
	return fmt.Sprintf("[%s] %s (%s)", f.Rule, f.Message, where)
}

// RenderJUnit writes the report as JUnit XML.
func RenderJUnit(w io.Writer, rep *Report) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(JUnit(rep)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
