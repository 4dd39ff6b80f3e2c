package policies

import (
	"hash/maphash"
	"math"
	"math/bits"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// valueHash hashes a value consistently with ast.Compare: values that compare
// equal (an object whatever its keys' order, 1 and 1.0) hash equal, but for
// numbers beyond float64's range (a lookup that misses, never a wrong answer). OPA's own
// Value.Hash takes a number's integer part, so inputs that differ only in a
// fractional request (1.25 and 1.5 CPUs) would share one bucket of the
// decision caches and every lookup would compare them all; this one mixes
// every bit, with a seed of the process's, so no tenant can aim collisions.
func valueHash(v ast.Value) uint64 {
	h := hashers.Get().(*hasher)
	defer hashers.Put(h)
	return h.value(v)
}

// hasher walks a value; its callbacks are made once, with the hasher, so
// that walking an object or a set allocates nothing.
type hasher struct {
	// sums are the order-independent sums of the objects and sets being
	// hashed, the innermost last.
	sums []uint64
	pair func(k, v *ast.Term)
	elem func(t *ast.Term)
}

var hashers = sync.Pool{New: func() any {
	h := &hasher{}
	h.pair, h.elem = h.addPair, h.addElem
	return h
}}

func (h *hasher) value(v ast.Value) uint64 {
	switch x := v.(type) {
	case ast.Null:
		return 1
	case ast.Boolean:
		if x {
			return 2
		}
		return 3
	case ast.Number:
		if f, ok := x.Float64(); ok && !math.IsInf(f, 0) {
			if f == 0 {
				f = 0 // -0 and 0 compare equal
			}
			return mix(4, math.Float64bits(f))
		}
		return mix(5, maphash.String(hashSeed, string(x)))
	case ast.String:
		return mix(6, maphash.String(hashSeed, string(x)))
	case *ast.Array:
		sum := uint64(7)
		for i := range x.Len() {
			sum = mix(sum, h.value(x.Elem(i).Value))
		}
		return sum
	case ast.Object:
		h.sums = append(h.sums, mix(8, uint64(x.Len())))
		x.Foreach(h.pair)
		return h.pop()
	case ast.Set:
		h.sums = append(h.sums, mix(9, uint64(x.Len())))
		x.Foreach(h.elem)
		return h.pop()
	}
	return mix(11, maphash.String(hashSeed, v.String()))
}

// A sum is independent of the order of an object's keys or a set's elements.
func (h *hasher) addPair(k, v *ast.Term) {
	s := mix(h.value(k.Value), h.value(v.Value))
	h.sums[len(h.sums)-1] += s
}

func (h *hasher) addElem(t *ast.Term) {
	s := mix(10, h.value(t.Value))
	h.sums[len(h.sums)-1] += s
}

func (h *hasher) pop() uint64 {
	s := h.sums[len(h.sums)-1]
	h.sums = h.sums[:len(h.sums)-1]
	return s
}

var hashSeed = maphash.MakeSeed()

// mix combines two words into one well-spread word (a multiply-xorshift,
// as wyhash's).
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^0x9e3779b97f4a7c15, b^0xe7037ed1a0b428db)
	return hi ^ lo
}
