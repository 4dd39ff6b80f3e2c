package jsonmap

// At decodes only the value at path (object keys from the outermost object's)
// in data, one JSON object: every other value is checked as Object would
// decode it, without being built. found is false when there is no value at
// path, or null on the way to it. ok is false for data Object declines, for a
// key repeated along path (a typed decoder would merge both values), and for a
// value on the way that is neither an object nor null.
//
// The mutating path reads only an object's own labels to see that it has
// nothing to do: through encoding/json this scanned the object twice
// (checkValid, then the decode) and was a third of what such a request cost
// (BenchmarkHandler mutate Job CREATE labeled).
func At(data []byte, path []string) (v any, found, ok bool) {
	if len(path) == 0 {
		panic("jsonmap: At needs a path")
	}
	// skip tallies what it skips in a deferring's counts; At reads none.
	d := decoder{data: data, deferring: &deferring{}}
	d.space()
	if !d.at('{') {
		return nil, false, false
	}
	if v, found, ok = d.find(path); !ok {
		return nil, false, false
	}
	d.space()
	if d.i != len(d.data) {
		return nil, false, false
	}
	return v, found, true
}

// find walks the object at d.i: the member path[0] is decoded (path[1:] of it,
// when there is more), every other member skipped.
func (d *decoder) find(path []string) (v any, found, ok bool) {
	seen := false
	ok = d.skipMembers('}', func() bool {
		if !d.at('"') {
			return false
		}
		k, ok := d.string()
		if !ok || !d.colon() {
			return false
		}
		if k != path[0] {
			return d.skip()
		}
		if seen {
			return false // repeated along the path
		}
		seen = true
		switch {
		case len(path) == 1:
			v, ok = d.value()
			found = ok
			return ok
		case d.at('{'):
			v, found, ok = d.find(path[1:])
			return ok
		case d.at('n'):
			return d.literal("null")
		}
		return false // neither an object nor null on the way
	})
	return v, found, ok
}
