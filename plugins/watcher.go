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
	fw      notifier
	events  <-chan fsnotify.Event
	errs    <-chan error
	changes chan *Snapshot
	cur     atomic.Pointer[Snapshot]
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once

	// Owned by the goroutine (before it starts, by NewWatcher).
	sc         *scanner
	parentDir  string // cfg.Dir's parent, watched to see the directory itself change; "" for the root
	seq        uint64
	watched    string // watched resolved directory ("" when not watched)
	watchedFI  os.FileInfo
	watchErr   error // why a watch could not be set, reported as a Problem
	pending    bool  // a rescan is due when the timer fires
	firstEvent time.Time
	timer      *time.Timer
	kick       chan struct{} // Rescan's request, buffered: requests coalesce
	stats      watcherStats
}

type watcherStats struct {
	scans, events atomic.Uint64
}

// notifier is what a Watcher needs of an *fsnotify.Watcher besides its
// two channels. Tests give it a fake to run the Watcher inside a
// testing/synctest bubble, whose clock never advances while fsnotify's
// reader goroutine waits on I/O.
type notifier interface {
	Add(path string) error
	Remove(path string) error
	WatchList() []string
	Close() error
}

// NewWatcher takes the first snapshot of the directory, then watches the
// directory until Close. The directory must be readable at start: when it
// does not exist, is not a directory or cannot be read, NewWatcher returns
// an error wrapping [ErrNoDir], [ErrNotDir] or [ErrUnreadable] that names
// it. A directory that disappears later is a problem of the later
// snapshots, and is picked up again when it comes back.
//
// The first snapshot is the first value on [Watcher.Changes]. It leaves no
// file out for being written just before start: NewWatcher waits for
// such files to settle, for at most four times [Config.Debounce] and never
// more than 2 s. A file still being written then is an [ErrUnstable]
// problem of the first snapshot, and is loaded once it settles.
//
// The error is also non-nil for an invalid config or when fsnotify cannot
// start.
func NewWatcher(cfg Config) (*Watcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWatch, err)
	}
	w, err := startWatcher(cfg, fw, fw.Events, fw.Errors)
	if err != nil {
		fw.Close()
		return nil, err
	}
	return w, nil
}

// startWatcher is NewWatcher on a notifier and its channels, with cfg's
// defaults filled in: it takes the first snapshot and starts the goroutine.
// When it fails, closing n is the caller's.
func startWatcher(cfg Config, n notifier, events <-chan fsnotify.Event, errs <-chan error) (*Watcher, error) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{
		cfg:     cfg,
		fw:      n,
		events:  events,
		errs:    errs,
		changes: make(chan *Snapshot, 1),
		cancel:  cancel,
		done:    make(chan struct{}),
		sc:      newScanner(cfg),
		timer:   time.NewTimer(time.Hour),
		kick:    make(chan struct{}, 1),
	}
	w.timer.Stop()
	if parent := filepath.Dir(cfg.Dir); parent != cfg.Dir { // the root has no parent to watch
		w.parentDir = parent
	}
	r, err := w.firstScan(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	w.deliver(r)
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

// Rescan asks for a rescan of the directory as if a file had changed
// (after the quiet time), for an operator who knows of a change fsnotify
// cannot see (a network file system) or who sent SIGHUP. Requests made
// before the rescan runs are one rescan. It never blocks.
func (w *Watcher) Rescan() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close stops the goroutine, waits for it, releases the fsnotify watcher
// and closes the Changes channel. It is safe to call more than once; later
// calls return nil.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		w.cancel()
		<-w.done
		err = w.fw.Close()
		close(w.changes)
	})
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
		case ev, ok := <-w.events:
			if !ok {
				return
			}
			w.stats.events.Add(1)
			if w.relevant(ev) {
				w.touch()
			}
		case err, ok := <-w.errs:
			if !ok {
				return
			}
			// An overflow means events were lost; any other error may
			// mean the same. Either way: look again.
			w.cfg.Logger.Warn("plugins: watch error; rescanning", "dir", w.cfg.Dir, "err", err)
			w.touch()
		case <-w.kick:
			w.touch()
		case <-w.timer.C:
			w.pending = false
			w.rescan(ctx)
		}
	}
}

// relevant reports whether an event may change the snapshot or the
// watches: anything about the directory entry itself (in its parent), the
// parent itself (deleted, its watch is gone), the resolved directory, or a
// candidate file in it. Events for temporaries and other siblings are
// dropped without a rescan.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	switch dir, base := filepath.Split(ev.Name); {
	case ev.Name == w.cfg.Dir || ev.Name == w.watched || ev.Name == w.parentDir:
		return true
	case filepath.Clean(dir) == w.watched:
		return isCandidate(base)
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

// scan resolves the directory, makes the watches match it, and scans it.
// The error wraps ErrNoDir, ErrNotDir or ErrUnreadable when the directory
// cannot be read, or is the context's.
func (w *Watcher) scan(ctx context.Context, prev *Snapshot) (scanResult, error) {
	d := resolveDir(w.cfg.Dir)
	w.syncWatches(d)
	w.stats.scans.Add(1)
	ls, err := w.sc.list(d)
	if err != nil {
		return scanResult{}, err
	}
	return w.sc.read(ctx, ls, prev)
}

// firstScan takes the first snapshot. Files still being written are waited
// for: the directory is scanned again when the earliest of them may have
// settled, until startWait has passed. What is still unsettled then is an
// ErrUnstable problem, so that the first snapshot leaves no file out
// silently; the file is looked at again later, like any file being
// written. A directory that cannot be read is an error.
func (w *Watcher) firstScan(ctx context.Context) (scanResult, error) {
	deadline := time.Now().Add(w.cfg.startWait())
	for {
		r, err := w.scan(ctx, nil)
		if err != nil {
			return scanResult{}, dirError(w.cfg.Dir, err)
		}
		next, ok := r.nextLook()
		if !ok || next.After(deadline) {
			r.reportUnsettled()
			return r, nil
		}
		time.Sleep(time.Until(next))
	}
}

// rescan scans the directory and delivers the snapshot. A directory that
// cannot be read any more gives a snapshot with no modules and that
// problem; the watcher picks the directory up when it comes back.
func (w *Watcher) rescan(ctx context.Context) {
	r, err := w.scan(ctx, w.cur.Load())
	if ctx.Err() != nil {
		return // closing
	}
	if err != nil {
		r = scanResult{snap: &Snapshot{source: w.cfg.Source, problems: []Problem{{Path: w.cfg.Dir, Err: err}}}}
	}
	w.deliver(r)
}

// deliver adds the watch problem to a scan's snapshot, arranges the next
// look at the directory, and publishes the snapshot.
func (w *Watcher) deliver(r scanResult) {
	if w.watchErr != nil {
		// After the scan's own problems, which are sorted with the
		// directory's last.
		r.snap.problems = append(r.snap.problems, Problem{Path: w.cfg.Dir, Err: w.watchErr})
	}
	w.lookAgain(r)
	w.publish(r.snap)
}

// lookAgain arms the timer for when the earliest file still being written
// may have settled, or for the next poll when a watch could not be set,
// whichever comes first.
func (w *Watcher) lookAgain(r scanResult) {
	next, ok := r.nextLook()
	if w.watchErr != nil {
		if poll := time.Now().Add(w.cfg.RetryInterval); !ok || poll.Before(next) {
			next, ok = poll, true
		}
	}
	if ok {
		w.retryAt(next)
	}
}

// publish makes snap the current snapshot and delivers it on Changes,
// unless it says the same as the current one.
func (w *Watcher) publish(snap *Snapshot) {
	if cur := w.cur.Load(); cur != nil && cur.sameContent(snap) {
		return
	}
	w.seq++
	snap.seq = w.seq
	w.cur.Store(snap)
	// Coalesce: only the owner sends, so after taking out a snapshot the
	// consumer has not received yet, the send cannot block.
	select {
	case <-w.changes:
	default:
	}
	w.changes <- snap
}

// syncWatches makes the fsnotify watches match the directory as d says it
// is now: the parent directory (to see the directory itself appear,
// disappear or be retargeted) and the resolved directory (to see its
// files). A watch that cannot be set becomes watchErr: a problem of the
// snapshot, and a reason to poll.
func (w *Watcher) syncWatches(d dirState) {
	parentErr := w.watchParent()
	dirErr := w.watchDir(d)
	w.watchErr = w.watchProblem(parentErr, dirErr)
}

// watchParent adds the watch on the directory's parent when it is not in
// place: not added yet, or dropped by fsnotify with a deleted parent.
func (w *Watcher) watchParent() error {
	if w.parentDir == "" || w.isWatched(w.parentDir) {
		return nil
	}
	if err := w.fw.Add(w.parentDir); err != nil {
		return fmt.Errorf("parent %s: %w", w.parentDir, err)
	}
	return nil
}

// watchDir moves the watch on the directory's files to the directory d
// resolves to, unless that one is watched already. The same path may be a
// new directory (deleted and created again), whose watch fsnotify dropped
// with the old one: identities are compared too.
func (w *Watcher) watchDir(d dirState) error {
	if w.watching(d) {
		return nil
	}
	if w.watched != "" && w.watched != w.parentDir {
		_ = w.fw.Remove(w.watched) // may be gone already
	}
	w.watched, w.watchedFI = "", nil
	if d.err != nil {
		return nil // nothing to watch; the parent's watch sees it come back
	}
	if err := w.fw.Add(d.path); err != nil {
		return fmt.Errorf("%s: %v", d.path, err)
	}
	w.watched, w.watchedFI = d.path, d.fi
	return nil
}

// watching reports whether the watch on the directory's files is the one
// d calls for: none when d is no directory, else one on d's directory.
func (w *Watcher) watching(d dirState) bool {
	if d.err != nil {
		return w.watched == ""
	}
	return d.path == w.watched && w.watchedFI != nil && os.SameFile(d.fi, w.watchedFI) && w.isWatched(d.path)
}

// watchProblem says why the watches could not be set, or is nil.
func (w *Watcher) watchProblem(parentErr, dirErr error) error {
	switch {
	case errors.Is(parentErr, fs.ErrNotExist):
		return fmt.Errorf("%w: parent directory %s does not exist; polling every %v", ErrWatch, w.parentDir, w.cfg.RetryInterval)
	case parentErr != nil || dirErr != nil:
		return fmt.Errorf("%w: %v; polling every %v", ErrWatch, errors.Join(parentErr, dirErr), w.cfg.RetryInterval)
	}
	return nil
}

func (w *Watcher) isWatched(path string) bool {
	for _, p := range w.fw.WatchList() {
		if p == path {
			return true
		}
	}
	return false
}
