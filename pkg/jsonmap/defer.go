package jsonmap

import "bytes"

// Deferred is a value ObjectDeferring left undecoded.
type Deferred struct {
	// JSON is a copy of its bytes; nil when there was no value at the path.
	JSON []byte
	// Depth is how many levels it has (1 for a scalar or an empty list or
	// object), and Values how many values it holds, itself included, as
	// written (a key repeated in an object counts each time): what a walk of
	// it would meet, so that a bound on a decoded object's shape can still
	// count what was left out.
	Depth, Values int
}

// ObjectDeferring is ObjectUniqueTo, but the value at each of paths (object
// keys from the outermost object's) is checked as it would be decoded and
// left out of the map: deferred[i] is the value at paths[i]. ok is what
// ObjectUniqueTo's would be, and Value decodes each deferred value as
// ObjectUniqueTo would have.
//
// The API server sends every object with its managedFields, a tree as large as
// the object that an admission check rarely reads: decoding it was half the
// cost of a stored 20 KB JobSet's review (BenchmarkDecode).
//
// Every path is at most uniqueTo keys long: keys must be unique along it (a
// repeated parent would leave its last value in the map and its first one's
// member deferred), and need not be inside a deferred value, which is skipped
// rather than decoded.
func ObjectDeferring(data []byte, uniqueTo int, paths [][]string) (m map[string]any, deferred []Deferred, ok bool) {
	f := &deferring{paths: paths, raw: make([]Deferred, len(paths)), keys: make([]string, uniqueTo), keyed: make([]bool, uniqueTo)}
	for _, p := range paths {
		if len(p) == 0 || len(p) > uniqueTo {
			panic("jsonmap: a deferred path must be no deeper than the keys are unique")
		}
	}
	d := decoder{data: data, uniqueTo: uniqueTo, deferring: f}
	if m, ok = d.whole(); !ok {
		return nil, nil, false
	}
	return m, f.raw, true
}

// Value decodes data, one JSON value and nothing else but whitespace.
func Value(data []byte) (any, bool) {
	d := decoder{data: data}
	d.space()
	return d.only()
}

// deferring is the state of ObjectDeferring's decoder.
type deferring struct {
	paths [][]string
	raw   []Deferred
	// base is the depth of the object holding the value being skipped, and
	// depth and values what skip met of it so far.
	base, depth, values int
	// keys[n-1] is the key of the member being decoded at depth n, when
	// keyed[n-1]; an array's elements have none. Only the paths' depths
	// (uniqueTo) are kept.
	keys  []string
	keyed []bool
}

// enterArray notes an array opened at depth.
func (f *deferring) enterArray(depth int) {
	if depth <= len(f.keys) {
		f.keyed[depth-1] = false
	}
}

// at is called with d at the value of a member of key k: when the member is at
// a deferred path, it checks and keeps the value's bytes (deferred true, ok
// whether the value is one the decoder takes).
func (f *deferring) at(d *decoder, k string) (deferred, ok bool) {
	n := d.depth
	if n > len(f.keys) {
		return false, true
	}
	f.keys[n-1], f.keyed[n-1] = k, true
	for i, p := range f.paths {
		if len(p) != n || !f.on(p) {
			continue
		}
		if f.raw[i].JSON != nil && n <= d.uniqueTo {
			return true, false // a repeated key
		}
		start := d.i
		f.base, f.depth, f.values = n, 0, 0
		if !d.skip() {
			return true, false
		}
		f.raw[i] = Deferred{JSON: bytes.Clone(d.data[start:d.i]), Depth: f.depth, Values: f.values}
		return true, true
	}
	return false, true
}

// on reports whether the member being decoded is at path p.
func (f *deferring) on(p []string) bool {
	for j, k := range p {
		if !f.keyed[j] || f.keys[j] != k {
			return false
		}
	}
	return true
}

// skip checks the value at d.i as value decodes it, without building it: it
// declines exactly what value declines.
func (d *decoder) skip() bool {
	if d.i >= len(d.data) {
		return false
	}
	f := d.deferring
	f.values++
	f.depth = max(f.depth, d.depth-f.base+1)
	switch d.data[d.i] {
	case '{':
		return d.skipObject()
	case '[':
		return d.skipArray()
	case '"':
		return d.skipString()
	}
	_, ok := d.value() // a literal or a number: nothing to build
	return ok
}

// skipObject skips an object; no key of it need be unique (see
// ObjectDeferring).
func (d *decoder) skipObject() bool {
	return d.skipMembers('}', func() bool {
		if !d.at('"') || !d.skipString() || !d.colon() {
			return false
		}
		return d.skip()
	})
}

func (d *decoder) skipArray() bool { return d.skipMembers(']', d.skip) }

// skipMembers skips an object or array, d.i at its opening bracket, each member
// with one.
func (d *decoder) skipMembers(closing byte, one func() bool) bool {
	if d.depth++; d.depth > maxDepth {
		return false
	}
	d.i++
	d.space()
	for !d.at(closing) {
		if !one() {
			return false
		}
		d.space()
		if !d.at(',') {
			break
		}
		d.i++
		d.space()
		if d.at(closing) {
			return false // a trailing comma
		}
	}
	if !d.at(closing) {
		return false
	}
	d.i++
	d.depth--
	return true
}

// skipString skips a string as string decodes it: a control character or an
// unterminated string is declined, a \u escape is left to delegate.
func (d *decoder) skipString() bool {
	for i := d.i + 1; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			return true
		case c == '\\':
			if i+1 >= len(d.data) {
				return false
			}
			if escapes[d.data[i+1]] == 0 {
				_, ok := d.delegate(d.i)
				return ok
			}
			i++
		case c < 0x20:
			return false
		}
	}
	return false
}
