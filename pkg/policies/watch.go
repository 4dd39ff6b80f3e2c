package policies

import (
	"context"
	"fmt"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Start loads the policy directory and reloads it whenever it changes, until ctx
// is done. It is a controller-runtime Runnable (manager.Add(engine)).
//
// A ConfigMap volume is updated by writing a new "..<timestamp>" directory and
// swapping the "..data" symlink, so the engine watches the directory itself (and
// its visible subdirectories) and reacts to any event: after Debounce without
// further events it re-reads everything. A set that fails to load is refused and
// the last good one keeps serving (see Load). A periodic re-read (Resync) covers
// lost events. Start returns an error only when the directory cannot be watched
// at all; a policy set that does not load is not fatal, Ready stays false.
func (e *Engine) Start(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching policy directory: %w", err)
	}
	defer w.Close()
	// Watch before the first read, so that a change landing during it is seen.
	if err := w.Add(e.opts.Directory); err != nil {
		return fmt.Errorf("watching policy directory %s: %w", e.opts.Directory, err)
	}
	watched := map[string]bool{e.opts.Directory: true}
	sync := func() {
		dirs, _ := e.load(ctx)
		e.syncWatches(w, watched, dirs)
	}
	sync()

	debounce := time.NewTimer(e.opts.Debounce)
	if !debounce.Stop() {
		<-debounce.C
	}
	var resync <-chan time.Time
	if e.opts.Resync > 0 {
		t := time.NewTicker(e.opts.Resync)
		defer t.Stop()
		resync = t.C
	}
	for {
		select {
		case <-ctx.Done():
			debounce.Stop()
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			e.opts.Logger.V(5).Info("policy directory changed", "event", ev.String())
			debounce.Reset(e.opts.Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// An overflow means lost events: reload to be sure.
			e.opts.Logger.Error(err, "watching policy directory", "dir", e.opts.Directory)
			debounce.Reset(e.opts.Debounce)
		case <-debounce.C:
			sync()
		case <-resync:
			sync()
		}
	}
}

// syncWatches watches every visible subdirectory too (fsnotify is not recursive),
// and stops watching the ones that are gone.
// dirs is nil when the directory could not be read; the watches are kept then.
func (e *Engine) syncWatches(w *fsnotify.Watcher, watched map[string]bool, dirs []string) {
	if dirs == nil {
		return
	}
	want := map[string]bool{}
	for _, d := range dirs {
		want[d] = true
		if !watched[d] {
			if err := w.Add(d); err != nil {
				e.opts.Logger.Error(err, "watching policy subdirectory", "dir", d)
				continue
			}
			watched[d] = true
		}
	}
	for d := range watched {
		if !want[d] {
			_ = w.Remove(d)
			delete(watched, d)
		}
	}
}

// NeedLeaderElection tells controller-runtime to run the engine on every replica:
// each one serves requests and needs the policies.
func (*Engine) NeedLeaderElection() bool { return false }
