package review

import (
	"bufio"
	"bytes"
	"strings"
)

// document is one YAML document of a file: its text and the line it starts on.
type document struct {
	index int
	// firstLine is the file line of text's first line.
	firstLine int
	text      []byte
}

// splitDocuments splits a YAML stream at "---" separator lines (as kubectl does),
// keeping each document's starting line. A "..." line ends a document.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var docs []document
	cur := document{index: 1, firstLine: 1}
	var buf bytes.Buffer
	flush := func(nextLine int) {
		cur.text = append([]byte(nil), buf.Bytes()...)
		docs = append(docs, cur)
		buf.Reset()
		cur = document{index: cur.index + 1, firstLine: nextLine}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), MaxFileBytes+1)
	line := 0
	ended := false
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimRight(text, " \t\r")
		if rest, ok := strings.CutPrefix(trimmed, "---"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			flush(line + 1)
			ended = false
			rest = strings.TrimSpace(rest)
			if rest != "" && !strings.HasPrefix(rest, "#") {
				// "--- value": the document starts on the separator line.
				cur.firstLine = line
				buf.WriteString(rest)
				buf.WriteByte('\n')
			}
			continue
		}
		if trimmed == "..." {
			ended = true
			continue
		}
		if ended {
			// Only comments and blank lines may follow "..." before the next "---".
			if t := strings.TrimSpace(text); t != "" && !strings.HasPrefix(t, "#") {
				flush(line)
				ended = false
			} else {
				continue
			}
		}
		// Every line is kept, comments and blank lines included, so that line
		// n of a document is line firstLine+n-1 of the file.
		buf.WriteString(text)
		buf.WriteByte('\n')
	}
	flush(line + 1)
	return docs
}

// isBlankDocument reports a document holding only comments and whitespace.
func isBlankDocument(text []byte) bool {
	for l := range strings.SplitSeq(string(text), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// firstContentLine is the line of a document's first non-blank, non-comment line.
func firstContentLine(d document) int {
	for i, l := range strings.Split(string(d.text), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return d.firstLine + i
		}
	}
	return d.firstLine
}

// blankComments empties whole-line comments, keeping the line count, so that a
// JSON document after helm's "# Source:" line is recognized and parsed as JSON.
func blankComments(text []byte) []byte {
	lines := strings.Split(string(text), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines[i] = ""
		}
	}
	return []byte(strings.Join(lines, "\n"))
}
