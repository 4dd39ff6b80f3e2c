package policies

import (
	"context"
	"sync"
)

// slots is the pool of evaluation slots, shared fairly between namespaces: one
// namespace (a tenant flooding the webhook with expensive objects) never holds
// them all while another namespace waits, and the slots that free up go round
// robin to the namespaces with waiting requests, first come first served
// within each. A namespace holds at most size-1 slots (when size > 1), so a
// request from a quiet namespace finds one free at once unless several
// namespaces are busy, and then waits its turn, not behind the whole flood.
//
// Background work (the audit) has a key of its own, holds at most half the
// slots, and gets a freed slot only when no admission request waits for it.
type slots struct {
	mu     sync.Mutex
	size   int
	perKey int
	inUse  int
	held   map[string]int
	// waiting are the queued requests by namespace; ring is the namespaces
	// with waiting requests, in the order they are served, next the place the
	// next free slot looks at first.
	waiting map[string][]*slotWaiter
	ring    []string
	next    int
}

type slotWaiter struct {
	key     string
	granted chan struct{}
}

// backgroundKey is the background work's key; no namespace has this name.
const backgroundKey = "\x00background"

// share is how many slots key may hold.
func (s *slots) share(key string) int {
	if key == backgroundKey {
		return max(1, s.size/2)
	}
	return s.perKey
}

func newSlots(size int) *slots {
	per := max(size-1, 1)
	return &slots{size: size, perKey: per, held: map[string]int{}, waiting: map[string][]*slotWaiter{}}
}

// acquire takes a slot for key, waiting within ctx; it returns false when ctx
// ended first. The caller gives the slot back with release(key).
func (s *slots) acquire(ctx context.Context, key string) bool {
	w := s.take(key)
	if w == nil {
		return true
	}
	select {
	case <-w.granted:
		return true
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted:
		// Granted as the context ended: hand it on.
		s.releaseLocked(key)
	default:
		s.dequeue(w)
	}
	return false
}

// take grants key a slot at once (nil), or queues it and returns its waiter.
func (s *slots) take(key string) *slotWaiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse < s.size && s.held[key] < s.share(key) && len(s.waiting[key]) == 0 {
		s.grant(key)
		return nil
	}
	w := &slotWaiter{key: key, granted: make(chan struct{})}
	if len(s.waiting[key]) == 0 {
		s.ring = append(s.ring, key)
	}
	s.waiting[key] = append(s.waiting[key], w)
	return w
}

// release gives key's slot back and hands free slots to the waiting.
func (s *slots) release(key string) {
	s.mu.Lock()
	s.releaseLocked(key)
	s.mu.Unlock()
}

func (s *slots) releaseLocked(key string) {
	s.inUse--
	if s.held[key]--; s.held[key] <= 0 {
		delete(s.held, key)
	}
	s.dispatch()
}

func (s *slots) grant(key string) {
	s.inUse++
	s.held[key]++
}

// dispatch gives free slots to waiting requests, one namespace after the
// other from next, skipping namespaces at their share; background work only
// when no namespace can take the slot.
func (s *slots) dispatch() {
	for s.inUse < s.size && len(s.ring) > 0 {
		if !s.grantNext(false) && !s.grantNext(true) {
			return // every waiting namespace is at its share
		}
	}
}

// grantNext grants a slot to the first eligible waiter from next, of
// admission (background false) or of background work.
func (s *slots) grantNext(background bool) bool {
	for i := range len(s.ring) {
		at := (s.next + i) % len(s.ring)
		key := s.ring[at]
		if (key == backgroundKey) != background || s.held[key] >= s.share(key) {
			continue
		}
		q := s.waiting[key]
		w := q[0]
		s.waiting[key] = q[1:]
		s.grant(key)
		close(w.granted)
		if len(s.waiting[key]) == 0 {
			s.removeFromRing(at)
			s.next = at // the namespace after it moved into its place
		} else {
			s.next = at + 1
		}
		if len(s.ring) > 0 {
			s.next %= len(s.ring)
		} else {
			s.next = 0
		}
		return true
	}
	return false
}

// dequeue removes a waiter whose context ended.
func (s *slots) dequeue(w *slotWaiter) {
	q := s.waiting[w.key]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		s.waiting[w.key] = q
		return
	}
	delete(s.waiting, w.key)
	for i, k := range s.ring {
		if k == w.key {
			s.removeFromRing(i)
			if s.next > i {
				s.next--
			}
			if len(s.ring) == 0 || s.next >= len(s.ring) {
				s.next = 0
			}
			return
		}
	}
}

func (s *slots) removeFromRing(i int) {
	key := s.ring[i]
	s.ring = append(s.ring[:i], s.ring[i+1:]...)
	if len(s.waiting[key]) == 0 {
		delete(s.waiting, key)
	}
}

// inUseNow is the number of slots held, for tests and messages.
func (s *slots) inUseNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse
}
