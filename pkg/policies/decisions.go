package policies

import (
	"bytes"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/kueue-guard/kueue-guard/pkg/config"
)

// DefaultDecisionCacheSize is how many decisions a policy set keeps by
// default (policies.decisionCacheSize).
const DefaultDecisionCacheSize = config.DefaultDecisionCacheSize

// decisionCache reuses a policy set's results: one query on one input gives
// one answer when the set calls no non-deterministic built-in. The key is the
// input as the policies see it — only the parts they read, the cluster's
// parts included — so it changes with what they read of the cluster (a
// namespace's labels, a ClusterQueue's usage) and never with what they do not
// (names, uids). A set's cache is dropped with the set when another loads.
// Entries hold their input's encoding (valueKey) and a hit compares it whole:
// the hash only chooses the bucket, which holds at most maxBucket entries.
//
// A tenant can fill it with shapes of its own: that costs others their cached
// decisions, never a wrong one, and its memory is bounded by count and by
// the inputs' encoded bytes (decisionBytes; larger inputs are never kept).
type decisionCache struct {
	mu      sync.Mutex // serializes a bucket's read-modify-write and the byte count
	entries *lru.Cache[decisionKey, []decision]
	bytes   int // the entries' sizes (decision.size)
}

// decisionBytes bounds the bytes the kept decisions hold, and maxDecisionKey
// the largest input encoding kept: real Jobs' and JobSets' are a few
// kilobytes, a thousand-replica JobSet's more than is worth keeping.
const (
	decisionBytes  = 16 << 20
	maxDecisionKey = 64 << 10
	// decisionOverhead is what an entry holds besides its input's bytes:
	// the result, the list's and the bucket's share.
	decisionOverhead = 256
	// maxBucket bounds the inputs compared on a lookup: distinct inputs
	// share a bucket only by a collision of a 64-bit hash.
	maxBucket = 4
)

type decisionKey struct {
	query *rego.PreparedEvalQuery
	hash  uint64
}

type decision struct {
	input []byte // the input's valueKey
	res   *Result
	size  int
}

// lookup is one request's key: get finds a decision with it, put keeps one
// under it, release returns its buffer.
type lookup struct {
	key decisionKey
	enc *valueKey
}

func (l lookup) release() {
	if l.enc != nil {
		putValueKey(l.enc)
	}
}

// newDecisionCache returns nil (no reuse) for size ≤ 0.
func newDecisionCache(size int) *decisionCache {
	if size <= 0 {
		return nil
	}
	c := &decisionCache{}
	entries, err := lru.NewWithEvict(size, func(_ decisionKey, bucket []decision) {
		for _, d := range bucket {
			c.bytes -= d.size // under c.mu: evictions happen in put
		}
	})
	if err != nil {
		return nil
	}
	c.entries = entries
	return c
}

// get is the result cached for input under query, if any, and the lookup to
// put one with (release it once done). Results are shared: callers only read
// them.
func (c *decisionCache) get(query *rego.PreparedEvalQuery, input ast.Value) (*Result, lookup, bool) {
	if c == nil || query == nil {
		return nil, lookup{}, false
	}
	enc, ok := encodeValue(input)
	if !ok || len(enc.buf) > maxDecisionKey {
		putValueKey(enc)
		return nil, lookup{}, false
	}
	l := lookup{key: decisionKey{query: query, hash: enc.hash()}, enc: enc}
	bucket, ok := c.entries.Get(l.key)
	if !ok {
		return nil, l, false
	}
	for _, d := range bucket {
		if bytes.Equal(d.input, enc.buf) {
			return d.res, l, true
		}
	}
	return nil, l, false
}

// put keeps a result that has no failure: a failure (a deadline, a full slot
// pool) says more about the moment than about the input. l is get's for the
// same input.
func (c *decisionCache) put(l lookup, res *Result) {
	if c == nil || l.enc == nil || len(res.Failures) > 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	bucket, _ := c.entries.Peek(l.key)
	for _, d := range bucket {
		if bytes.Equal(d.input, l.enc.buf) {
			return
		}
	}
	c.entries.Remove(l.key) // its bytes leave with it, and come back below
	if len(bucket) >= maxBucket {
		bucket = bucket[1:]
	}
	d := decision{input: bytes.Clone(l.enc.buf), res: res, size: len(l.enc.buf) + decisionOverhead}
	c.entries.Add(l.key, append(slices.Clip(bucket), d))
	c.bytes += sizeOf(bucket) + d.size
	for c.bytes > decisionBytes && c.entries.Len() > 1 {
		c.entries.RemoveOldest()
	}
}

func sizeOf(bucket []decision) int {
	n := 0
	for _, d := range bucket {
		n += d.size
	}
	return n
}
