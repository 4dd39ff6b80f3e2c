// Package jsonmap decodes JSON into the generic form of Kubernetes' unstructured
// objects (map[string]any, []any, string, int64, float64, bool, nil) exactly as
// sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts does, which the API
// machinery decodes unstructured objects with. It is ours because decoding the
// objects of an AdmissionReview was the largest single cost of a validating
// webhook's request (BenchmarkDecode: about twice as fast, a third of the
// allocations): one pass over the bytes where encoding/json validates them
// first, and the keys and values Kubernetes objects repeat (name, resources,
// cpu, ...) shared rather than allocated each time.
//
// It declines (ok false) whatever it does not decode exactly as that decoder
// does: invalid JSON, nesting deeper than maxDepth, a number that does not fit
// a float64. A string with a \u escape is handed to that decoder itself.
// FuzzDecode holds the two to the same answer.
package jsonmap

import (
	"strconv"
	"unicode/utf8"

	sigsjson "sigs.k8s.io/json"
)

// maxDepth bounds nesting, and so the recursion: deeper input is declined
// (encoding/json's own bound is 10000).
const maxDepth = 1000

// Object decodes data, which must be one JSON object and nothing else but
// whitespace.
func Object(data []byte) (map[string]any, bool) {
	return ObjectUniqueTo(data, 0)
}

// ObjectUniqueTo is Object, but declines data where a key is repeated in an
// object nested at most depth deep (the outermost is at 1). A map keeps a
// repeated key's last value; a typed decoder reads every occurrence (and
// refuses the whole if one does not fit, merges two objects): where the
// caller reads the map as a typed decoder would, keys must be unique.
func ObjectUniqueTo(data []byte, depth int) (map[string]any, bool) {
	d := decoder{data: data, uniqueTo: depth}
	return d.whole()
}

// whole decodes d's data, which must be one JSON object and nothing else but
// whitespace.
func (d *decoder) whole() (map[string]any, bool) {
	d.space()
	if !d.at('{') {
		return nil, false
	}
	v, ok := d.only()
	m, _ := v.(map[string]any)
	return m, ok
}

// only decodes the value at d.i, which must be followed by nothing but
// whitespace.
func (d *decoder) only() (any, bool) {
	v, ok := d.value()
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.data)
}

type decoder struct {
	data  []byte
	i     int
	depth int
	// uniqueTo is the depth down to which a repeated key declines.
	uniqueTo int
	// deferring is set by ObjectDeferring (see defer.go).
	deferring *deferring
}

func (d *decoder) at(c byte) bool { return d.i < len(d.data) && d.data[d.i] == c }

// colon passes the ':' after an object's key, and the space around it.
func (d *decoder) colon() bool {
	d.space()
	if !d.at(':') {
		return false
	}
	d.i++
	d.space()
	return true
}

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, bool) {
	if d.i >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.i]; c {
	case '{':
		m, ok := d.object()
		return m, ok
	case '[':
		return d.array()
	case '"':
		s, ok := d.string()
		return s, ok
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return d.number()
		}
		return nil, false
	}
}

func (d *decoder) literal(word string) bool {
	if len(d.data)-d.i < len(word) || string(d.data[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// object decodes an object; d.i is at its '{'.
func (d *decoder) object() (map[string]any, bool) {
	if d.depth++; d.depth > maxDepth {
		return nil, false
	}
	d.i++
	m := make(map[string]any)
	d.space()
	if d.at('}') {
		d.i++
		d.depth--
		return m, true
	}
	for {
		if !d.at('"') {
			return nil, false
		}
		k, ok := d.string()
		if !ok || !d.colon() {
			return nil, false
		}
		if !d.member(m, k) {
			return nil, false
		}
		d.space()
		switch {
		case d.at(','):
			d.i++
			d.space()
		case d.at('}'):
			d.i++
			d.depth--
			return m, true
		default:
			return nil, false
		}
	}
}

// member decodes the value of m's key k into m, or defers it (see defer.go).
func (d *decoder) member(m map[string]any, k string) bool {
	if d.deferring != nil {
		if deferred, ok := d.deferring.at(d, k); deferred {
			return ok
		}
	}
	v, ok := d.value()
	if !ok {
		return false
	}
	if d.depth <= d.uniqueTo {
		if _, repeated := m[k]; repeated {
			return false
		}
	}
	// A repeated key keeps its last value, as encoding/json does.
	m[k] = v
	return true
}

// array decodes an array; d.i is at its '['. An empty one is an empty slice,
// not nil, as encoding/json's.
func (d *decoder) array() (any, bool) {
	if d.depth++; d.depth > maxDepth {
		return nil, false
	}
	d.i++
	if d.deferring != nil {
		d.deferring.enterArray(d.depth)
	}
	a := make([]any, 0)
	d.space()
	if d.at(']') {
		d.i++
		d.depth--
		return a, true
	}
	for {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		switch {
		case d.at(','):
			d.i++
			d.space()
		case d.at(']'):
			d.i++
			d.depth--
			return a, true
		default:
			return nil, false
		}
	}
}

// string decodes a string; d.i is at its opening quote. Printable ASCII
// without escapes is taken as it is (shared when common).
func (d *decoder) string() (string, bool) {
	start := d.i + 1
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			d.i = i + 1
			return intern(d.data[start:i]), true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return d.unquote(start, i)
		}
	}
	return "", false
}

// unquote decodes the rest of a string from i, its bytes from start to i
// plain, as encoding/json's unquote does: the one-character escapes, and
// UTF-8 with each byte of an invalid sequence read as U+FFFD. A \u escape
// (and its surrogate pairs) is left to sigs.k8s.io/json itself; a control
// character is invalid JSON, declined.
func (d *decoder) unquote(start, i int) (string, bool) {
	b := append(make([]byte, 0, i-start+16), d.data[start:i]...)
	for i < len(d.data) {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			return string(b), true
		case c == '\\':
			if i+1 >= len(d.data) {
				return "", false
			}
			e := escapes[d.data[i+1]]
			if e == 0 {
				return d.delegate(start - 1)
			}
			b = append(b, e)
			i += 2
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			// A run of plain ASCII at once: an escaped string is often
			// long (kubectl's last-applied manifest, as large as the object).
			j := i + 1
			for j < len(d.data) && plainASCII(d.data[j]) {
				j++
			}
			b = append(b, d.data[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	return "", false
}

// plainASCII is a byte a string holds as it is: not a quote, a backslash, a
// control character or part of a multi-byte sequence.
func plainASCII(c byte) bool { return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' }

// escapes are JSON's one-character escapes and what they stand for, 0 for
// none: a table, not a map, as a long escaped string (kubectl's last-applied
// manifest) has thousands.
var escapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// delegate decodes the string whose opening quote is at open with
// sigs.k8s.io/json; an invalid one is declined.
func (d *decoder) delegate(open int) (string, bool) {
	i := open + 1
	for i < len(d.data) {
		switch d.data[i] {
		case '\\':
			i += 2
		case '"':
			var s string
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(d.data[open:i+1], &s); err != nil {
				return "", false
			}
			d.i = i + 1
			return s, true
		default:
			i++
		}
	}
	return "", false
}

// number decodes a number: an int64 when it is an integer that fits, else a
// float64, as sigs.k8s.io/json's PreserveInts; declined when it fits neither
// (encoding/json refuses it).
func (d *decoder) number() (any, bool) {
	start := d.i
	if d.at('-') {
		d.i++
	}
	switch {
	case d.at('0'):
		d.i++
	case d.i < len(d.data) && d.data[d.i] >= '1' && d.data[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	integer := true
	if d.at('.') {
		d.i++
		if !d.digits() {
			return nil, false
		}
		integer = false
	}
	if d.at('e') || d.at('E') {
		d.i++
		if d.at('+') || d.at('-') {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
		integer = false
	}
	lit := d.data[start:d.i]
	if integer {
		if n, ok := smallInt(lit); ok {
			return n, true
		}
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			return n, true
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return nil, false
	}
	return f, true
}

// digits skips one or more decimal digits; false when there is none.
func (d *decoder) digits() bool {
	start := d.i
	for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// smallInt parses an integer literal of at most 18 digits, which always fits
// an int64, without strconv's string.
func smallInt(lit []byte) (int64, bool) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range lit {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
