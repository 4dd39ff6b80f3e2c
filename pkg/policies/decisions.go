package policies

import (
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
// Entries hold their input and a hit compares it whole: the hash (valueHash)
// only chooses the bucket, which holds at most maxBucket entries.
//
// A tenant can fill it with shapes of its own: that costs others their cached
// decisions, never a wrong one, and its memory is bounded by count and by
// the size of the objects kept (decisionBytes; larger objects are never kept).
type decisionCache struct {
	mu      sync.Mutex // serializes a bucket's read-modify-write and the byte count
	entries *lru.Cache[decisionKey, []decision]
	bytes   int // the objects' JSON sizes of the entries kept
}

// decisionBytes bounds the objects' JSON bytes whose decisions are kept, and
// maxDecisionObject the largest object kept: an input costs a few times its
// object in memory, so this is tens of megabytes at most.
const (
	decisionBytes     = 16 << 20
	maxDecisionObject = 32 << 10
	// maxBucket bounds the inputs compared on a lookup: distinct inputs
	// share a bucket only by a collision of valueHash's 64 bits.
	maxBucket = 4
)

type decisionKey struct {
	query *rego.PreparedEvalQuery
	hash  uint64
}

type decision struct {
	input ast.Value
	res   *Result
	size  int
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

// get is the result cached for input under query, if any, and the key to put
// one under. Results are shared: callers only read them.
func (c *decisionCache) get(query *rego.PreparedEvalQuery, input ast.Value) (*Result, decisionKey, bool) {
	if c == nil || query == nil {
		return nil, decisionKey{}, false
	}
	key := decisionKey{query: query, hash: valueHash(input)}
	bucket, ok := c.entries.Get(key)
	if !ok {
		return nil, key, false
	}
	for _, d := range bucket {
		if d.input.Compare(input) == 0 {
			return d.res, key, true
		}
	}
	return nil, key, false
}

// put keeps a result that has no failure: a failure (a deadline, a full slot
// pool) says more about the moment than about the input. size is the
// request's object size (its JSON).
// key is get's for the same input.
func (c *decisionCache) put(key decisionKey, input ast.Value, res *Result, size int) {
	if c == nil || key.query == nil || len(res.Failures) > 0 || size <= 0 || size > maxDecisionObject {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	bucket, _ := c.entries.Peek(key)
	for _, d := range bucket {
		if d.input.Compare(input) == 0 {
			return
		}
	}
	c.entries.Remove(key) // its bytes leave with it, and come back below
	if len(bucket) >= maxBucket {
		bucket = bucket[1:]
	}
	c.entries.Add(key, append(slices.Clip(bucket), decision{input: input, res: res, size: size}))
	c.bytes += sizeOf(bucket) + size
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
