package testenv

import (
	"strings"
	"sync"
)

// Warnings collects the warnings (HTTP 299 Warning headers) the API server
// returns to a client, admission webhooks' included: set it as a rest.Config's
// WarningHandler.
type Warnings struct {
	mu   sync.Mutex
	seen []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *Warnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// All returns every warning so far, one per line.
func (w *Warnings) All() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.seen, "\n")
}

// Take returns every warning so far, one per line, and forgets them.
func (w *Warnings) Take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := strings.Join(w.seen, "\n")
	w.seen = nil
	return out
}
