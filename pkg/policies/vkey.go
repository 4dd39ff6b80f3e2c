package policies

import (
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// valueKey is the decision caches' form of an input: a canonical encoding,
// equal only for equal values (every value tagged, every string and
// collection length-prefixed, so no two values share an encoding), with an
// object's keys and a set's elements in OPA's sorted order. A cached decision
// keeps its input as these bytes rather than as the ast.Value: the garbage
// collector does not scan a []byte, where a kept value is thousands of
// pointers, and a full cache of those made every collection cycle long enough
// to stall requests on a 2-core node (make bench's open loop, which a heap
// profile traced to the kept inputs).
//
// A number is kept as its literal, so 1 and 1.0 are two keys: a miss, never
// a wrong answer (and sprintf tells them apart, so a decision may too).
type valueKey struct {
	buf []byte
	// pair and elem are the callbacks of Foreach, made once with the key so
	// that walking an object or a set allocates nothing.
	pair func(k, v *ast.Term)
	elem func(t *ast.Term)
	// ok is false once a value no input holds (a variable, a reference) was
	// met: such an input is not cached.
	ok bool
}

const (
	tagNull byte = iota + 1
	tagTrue
	tagFalse
	tagNumber
	tagString
	tagArray
	tagObject
	tagSet
)

var valueKeys = sync.Pool{New: func() any {
	k := &valueKey{}
	k.pair, k.elem = k.addPair, k.addElem
	return k
}}

// encodeValue is v's key from the pool (putValueKey returns it); ok is false
// for a value that cannot be a cached input.
func encodeValue(v ast.Value) (k *valueKey, ok bool) {
	k = valueKeys.Get().(*valueKey)
	k.buf, k.ok = k.buf[:0], true
	k.value(v)
	return k, k.ok
}

// maxPooledKey keeps a rare huge input's buffer out of the pool.
const maxPooledKey = 256 << 10

func putValueKey(k *valueKey) {
	if cap(k.buf) <= maxPooledKey {
		valueKeys.Put(k)
	}
}

// hash is the key's hash, with a seed of the process's, so that no tenant can
// aim collisions at a bucket.
func (k *valueKey) hash() uint64 { return maphash.Bytes(keySeed, k.buf) }

var keySeed = maphash.MakeSeed()

func (k *valueKey) value(v ast.Value) {
	switch x := v.(type) {
	case ast.Null:
		k.buf = append(k.buf, tagNull)
	case ast.Boolean:
		if x {
			k.buf = append(k.buf, tagTrue)
		} else {
			k.buf = append(k.buf, tagFalse)
		}
	case ast.Number:
		k.str(tagNumber, string(x))
	case ast.String:
		k.str(tagString, string(x))
	case *ast.Array:
		k.head(tagArray, x.Len())
		for i := range x.Len() {
			k.value(x.Elem(i).Value)
		}
	case ast.Object:
		k.head(tagObject, x.Len())
		x.Foreach(k.pair)
	case ast.Set:
		k.head(tagSet, x.Len())
		x.Foreach(k.elem)
	default:
		k.ok = false
	}
}

func (k *valueKey) addPair(key, v *ast.Term) {
	k.value(key.Value)
	k.value(v.Value)
}

func (k *valueKey) addElem(t *ast.Term) { k.value(t.Value) }

func (k *valueKey) head(tag byte, n int) {
	k.buf = binary.AppendUvarint(append(k.buf, tag), uint64(n))
}

func (k *valueKey) str(tag byte, s string) {
	k.head(tag, len(s))
	k.buf = append(k.buf, s...)
}
