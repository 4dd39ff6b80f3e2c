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

// Parse reads a rendered field path: field.Path's own form
// (`spec.template.spec.containers[0].resources`, `metadata.labels[kueue.x-k8s.io/queue-name]`)
// and, for paths written by hand or by older policies, a quoted key
// (`metadata.labels["kueue.x-k8s.io/queue-name"]`). A bracketed run of digits is
// an index, anything else in brackets a key. It is lenient: what follows a part it
// cannot read is dropped. The empty string is nil.
func Parse(s string) *field.Path {
	var p *field.Path
	add := func(name string) {
		if p == nil {
			p = field.NewPath(name)
		} else {
			p = p.Child(name)
		}
	}
	sub := func(key string, quoted bool) {
		if p == nil {
			p = field.NewPath("")
		}
		if n, err := strconv.Atoi(key); err == nil && !quoted && n >= 0 {
			p = p.Index(n)
		} else {
			p = p.Key(key)
		}
	}
	i := 0
	for i < len(s) {
		switch s[i] {
		case '.':
			i++
		case '[':
			end := -1
			if i+1 < len(s) && s[i+1] == '"' {
				// A quoted key: find the closing quote, honouring escapes.
				j := i + 2
				for j < len(s) && s[j] != '"' {
					if s[j] == '\\' {
						j++
					}
					j++
				}
				if j+1 < len(s) && s[j+1] == ']' {
					if key, err := strconv.Unquote(s[i+1 : j+1]); err == nil {
						sub(key, true)
						end = j + 2
					}
				}
			} else if k := strings.IndexByte(s[i:], ']'); k > 0 {
				sub(s[i+1:i+k], false)
				end = i + k + 1
			}
			if end < 0 {
				return p
			}
			i = end
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			add(s[i:j])
			i = j
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
	var segs []string
	s := p.String()
	i := 0
	for i < len(s) {
		switch s[i] {
		case '.':
			i++
		case '[':
			k := strings.IndexByte(s[i:], ']')
			if k < 0 {
				return segs
			}
			segs = append(segs, s[i+1:i+k])
			i += k + 1
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			segs = append(segs, s[i:j])
			i = j
		}
	}
	return segs
}

// String renders a path, or "" for none.
func String(p *field.Path) string {
	if p == nil {
		return ""
	}
	return p.String()
}
