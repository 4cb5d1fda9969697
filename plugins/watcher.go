package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher keeps a snapshot of the module directory up to date. It owns one
// goroutine, started by [NewWatcher] and stopped by [Watcher.Close], and one
// fsnotify watcher. Its methods are safe for concurrent use.
type Watcher struct {
	cfg     Config
	fw      *fsnotify.Watcher
	changes chan *Snapshot
	cur     atomic.Pointer[Snapshot]
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once

	// Owned by the goroutine.
	sc         *scanner
	seq        uint64
	parent     string // watched parent directory ("" when not watched)
	watched    string // watched resolved directory ("" when not watched)
	watchedFI  os.FileInfo
	watchErr   error // why a watch could not be set, reported as a Problem
	pending    bool
	firstEvent time.Time
	lastEvent  time.Time
	timer      *time.Timer
	stats      watcherStats
}

type watcherStats struct {
	scans, events atomic.Uint64
}

// NewWatcher scans the directory once, then watches it until Close. The
// first snapshot is available at once from [Watcher.Current] and is also
// the first value on [Watcher.Changes]. A directory that does not exist is
// not an error: the snapshot is empty, with an [ErrNoDir] problem, and the
// watcher picks the directory up when it appears. The error is non-nil for
// an invalid config or when fsnotify cannot start.
func NewWatcher(cfg Config) (*Watcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWatch, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{
		cfg:     cfg,
		fw:      fw,
		changes: make(chan *Snapshot, 1),
		cancel:  cancel,
		done:    make(chan struct{}),
		sc:      newScanner(cfg),
		timer:   time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	w.rescan(ctx) // first snapshot, delivered before the goroutine starts
	go w.run(ctx)
	return w, nil
}

// Changes returns the channel on which each new snapshot is delivered. It
// has a capacity of one and coalesces: a snapshot not yet received is
// replaced by a newer one, so a slow consumer only ever sees the latest
// set, and the watcher never blocks on it. A snapshot is delivered only
// when the modules (names, digests, paths) or the problems differ from the
// previous one. The channel is closed by Close.
func (w *Watcher) Changes() <-chan *Snapshot { return w.changes }

// Current returns the latest snapshot (never nil).
func (w *Watcher) Current() *Snapshot { return w.cur.Load() }

// Close stops the goroutine, waits for it, releases the fsnotify watcher
// and closes the Changes channel. It is safe to call more than once; later
// calls return nil.
func (w *Watcher) Close() error {
	err := ErrClosed
	w.once.Do(func() {
		w.cancel()
		<-w.done
		err = w.fw.Close()
		close(w.changes)
	})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// run is the owner goroutine: it turns fsnotify events into debounced
// rescans.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	defer w.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.stats.events.Add(1)
			if w.relevant(ev) {
				w.touch()
			}
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			// An overflow means events were lost; any other error may
			// mean the same. Either way: look again.
			w.cfg.Logger.Warn("plugins: watch error; rescanning", "dir", w.cfg.Dir, "err", err)
			w.touch()
		case <-w.timer.C:
			w.pending = false
			w.rescan(ctx)
		}
	}
}

// relevant reports whether an event may change the snapshot: anything about
// the directory entry itself (in its parent), the resolved directory, or a
// candidate file in it. Events for temporaries and other siblings are
// dropped without a rescan.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	switch dir, base := filepath.Split(ev.Name); {
	case ev.Name == w.cfg.Dir || ev.Name == w.watched:
		return true
	case filepath.Clean(dir) == w.watched:
		return IsCandidate(base)
	}
	return false
}

// touch records a change and (re)arms the timer: the rescan runs once
// Debounce has passed without a change, and at most MaxDelay after the
// first change of a burst.
func (w *Watcher) touch() {
	now := time.Now()
	if !w.pending {
		w.pending = true
		w.firstEvent = now
	}
	w.lastEvent = now
	at := now.Add(w.cfg.Debounce)
	if limit := w.firstEvent.Add(w.cfg.MaxDelay); at.After(limit) {
		at = limit
	}
	w.timer.Reset(time.Until(at))
}

// retryAt arms the timer for a rescan at t unless one is due earlier.
func (w *Watcher) retryAt(t time.Time) {
	if w.pending {
		return // a burst is in progress; its rescan will look again
	}
	w.pending = true
	w.firstEvent = time.Now()
	w.timer.Reset(time.Until(t))
}

// rescan re-resolves the directory, refreshes the watches, scans, and
// delivers the snapshot if it differs from the current one.
func (w *Watcher) rescan(ctx context.Context) {
	w.syncWatches()
	r, err := w.sc.scan(ctx, w.cur.Load())
	if err != nil {
		return // closing
	}
	w.stats.scans.Add(1)
	snap := r.snap
	if w.watchErr != nil {
		snap.problems = append(snap.problems, Problem{Path: w.cfg.Dir, Err: w.watchErr})
	}
	sortProblems(snap.problems)

	var next time.Time
	for _, u := range r.unstable {
		if next.IsZero() || u.retryAt.Before(next) {
			next = u.retryAt
		}
	}
	if w.watchErr != nil {
		if t := time.Now().Add(w.cfg.RetryInterval); next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if !next.IsZero() {
		w.retryAt(next)
	}

	if prev := w.cur.Load(); prev != nil && prev.sameContent(snap) {
		return
	}
	w.seq++
	snap.seq = w.seq
	w.cur.Store(snap)
	// Coalesce: the goroutine is the only sender, so after taking out a
	// snapshot the consumer has not received yet, the send cannot block.
	select {
	case <-w.changes:
	default:
	}
	w.changes <- snap
}

// syncWatches makes the fsnotify watches match the directory as it is now:
// the parent directory (to see the directory itself appear, disappear or be
// retargeted) and the resolved directory (to see its files).
func (w *Watcher) syncWatches() {
	var errs []error
	parentMissing := false
	parent := filepath.Dir(w.cfg.Dir)
	if parent == w.cfg.Dir {
		parent = "" // the root has no parent to watch
	}
	if w.parent != parent || parent != "" && !w.isWatched(parent) {
		if w.parent != "" {
			_ = w.fw.Remove(w.parent)
			w.parent = ""
		}
		if parent != "" {
			if err := w.fw.Add(parent); err != nil {
				parentMissing = errors.Is(err, fs.ErrNotExist)
				errs = append(errs, fmt.Errorf("parent %s: %w", parent, err))
			} else {
				w.parent = parent
			}
		}
	}

	target, err := filepath.EvalSymlinks(w.cfg.Dir)
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(target)
		if err == nil && !fi.IsDir() {
			target, fi = "", nil
		}
	}
	if err != nil {
		target, fi = "", nil
	}
	// The same path may be a new directory (deleted and created again), whose
	// watch fsnotify dropped with the old one: compare identities too.
	same := target == w.watched && (fi == nil) == (w.watchedFI == nil) &&
		(fi == nil || os.SameFile(fi, w.watchedFI)) && (target == "" || w.isWatched(target))
	if !same {
		if w.watched != "" && w.watched != parent {
			_ = w.fw.Remove(w.watched) // may be gone already
		}
		w.watched, w.watchedFI = "", nil
		if target != "" {
			if err := w.fw.Add(target); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", target, err))
			} else {
				w.watched, w.watchedFI = target, fi
			}
		}
	}
	if len(errs) > 0 {
		w.watchErr = fmt.Errorf("%w: %v; polling every %v", ErrWatch, errors.Join(errs...), w.cfg.RetryInterval)
		if parentMissing {
			w.watchErr = fmt.Errorf("%w: parent directory %s does not exist; polling every %v", ErrWatch, parent, w.cfg.RetryInterval)
		}
	} else {
		w.watchErr = nil
	}
}

func (w *Watcher) isWatched(path string) bool {
	for _, p := range w.fw.WatchList() {
		if p == path {
			return true
		}
	}
	return false
}
