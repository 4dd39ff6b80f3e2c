// Package fieldpath turns the field paths written by Rego policies and read back
// by the reviewer's locator into apimachinery's field.Path, the one type every
// violation carries.
//
// field.Path does not expose its elements, so Segments reads them back from its
// String form; that form is unambiguous for every key that contains no ']'.
package fieldpath

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// segment is one part of a rendered path: a name (after a dot or at the start)
// or a bracketed key or index.
type segment struct {
	text            string
	bracket, quoted bool
}

// split reads a rendered path into segments. With quotes, a bracket that starts
// with '"' holds a Go-quoted key. It stops at the first part it cannot read.
func split(s string, quotes bool) []segment {
	var segs []segment
	i := 0
	for i < len(s) {
		switch s[i] {
		case '.':
			i++
		case '[':
			if quotes && i+1 < len(s) && s[i+1] == '"' {
				// A quoted key: find the closing quote, honouring escapes.
				j := i + 2
				for j < len(s) && s[j] != '"' {
					if s[j] == '\\' {
						j++
					}
					j++
				}
				key, err := "", error(nil)
				if j+1 < len(s) && s[j+1] == ']' {
					key, err = strconv.Unquote(s[i+1 : j+1])
				}
				if j+1 >= len(s) || s[j+1] != ']' || err != nil {
					return segs
				}
				segs = append(segs, segment{text: key, bracket: true, quoted: true})
				i = j + 2
				continue
			}
			k := strings.IndexByte(s[i:], ']')
			if k <= 0 {
				return segs
			}
			segs = append(segs, segment{text: s[i+1 : i+k], bracket: true})
			i += k + 1
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			segs = append(segs, segment{text: s[i:j]})
			i = j
		}
	}
	return segs
}

// Parse reads a rendered field path: field.Path's own form
// (`spec.template.spec.containers[0].resources`, `metadata.labels[kueue.x-k8s.io/queue-name]`)
// and, for paths written by hand or by older policies, a quoted key
// (`metadata.labels["kueue.x-k8s.io/queue-name"]`). A bracketed run of digits is
// an index, anything else in brackets a key. It is lenient: what follows a part it
// cannot read is dropped. The empty string is nil.
func Parse(s string) *field.Path {
	var p *field.Path
	for _, seg := range split(s, true) {
		switch {
		case !seg.bracket && p == nil:
			p = field.NewPath(seg.text)
		case !seg.bracket:
			p = p.Child(seg.text)
		default:
			if p == nil {
				p = field.NewPath("")
			}
			if n, err := strconv.Atoi(seg.text); err == nil && !seg.quoted && n >= 0 {
				p = p.Index(n)
			} else {
				p = p.Key(seg.text)
			}
		}
	}
	return p
}

// Segments lists a path's names, keys and indexes (as decimal strings), root
// first: what a locator walks in a YAML or JSON document.
func Segments(p *field.Path) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, seg := range split(p.String(), false) {
		out = append(out, seg.text)
	}
	return out
}

// String renders a path, or "" for none.
func String(p *field.Path) string {
	if p == nil {
		return ""
	}
	return p.String()
}
