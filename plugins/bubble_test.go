package plugins

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

// fakeNotifier stands in for fsnotify inside a testing/synctest bubble,
// where fsnotify's reader goroutine, waiting on I/O, would keep the clock
// from advancing. Add accepts a path that exists, as inotify does; the
// events are those the test sends, as inotify would after each change.
type fakeNotifier struct {
	mu      sync.Mutex
	watched map[string]bool
	events  chan fsnotify.Event
	errs    chan error
}

func newFakeNotifier() *fakeNotifier {
	return &fakeNotifier{watched: map[string]bool{}, events: make(chan fsnotify.Event), errs: make(chan error)}
}

func (f *fakeNotifier) Add(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched[path] = true
	return nil
}

func (f *fakeNotifier) Remove(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.watched, path)
	return nil
}

// WatchList drops the watches of paths that are gone, as inotify drops the
// watch of a deleted directory.
func (f *fakeNotifier) WatchList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var l []string
	for p := range f.watched {
		if _, err := os.Stat(p); err != nil {
			delete(f.watched, p)
			continue
		}
		l = append(l, p)
	}
	return l
}

func (f *fakeNotifier) Close() error { return nil }

// bubble is a module directory and a Watcher on it, for a test that runs
// inside a testing/synctest bubble: the Watcher's clock is the bubble's,
// files written through the bubble get the bubble's time as their
// modification time, and each write is reported to the Watcher as inotify
// would report it. The file operations first wait until every other
// goroutine of the bubble is blocked, so the Watcher never looks at a file
// in the middle of one.
type bubble struct {
	t   *testing.T
	dir string
	fn  *fakeNotifier
	w   *Watcher
}

func newBubble(t *testing.T) *bubble {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &bubble{t: t, dir: dir, fn: newFakeNotifier()}
}

// start starts the Watcher; it is closed when the test ends.
func (b *bubble) start(cfg Config) {
	b.t.Helper()
	cfg.Dir = b.dir
	cfg, err := cfg.withDefaults()
	if err != nil {
		b.t.Fatal(err)
	}
	b.w, err = startWatcher(cfg, b.fn, b.fn.events, b.fn.errs)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() {
		if err := b.w.Close(); err != nil {
			b.t.Errorf("Close: %v", err)
		}
	})
}

func (b *bubble) path(name string) string { return filepath.Join(b.dir, name) }

// writeAt writes a file modified at mt, without an event: for files that
// are there before the Watcher starts.
func (b *bubble) writeAt(name, content string, mt time.Time) {
	b.t.Helper()
	writeFile(b.t, b.path(name), content)
	if err := os.Chtimes(b.path(name), mt, mt); err != nil {
		b.t.Fatal(err)
	}
}

// write writes a file now and reports it to the Watcher.
func (b *bubble) write(name, content string) {
	b.t.Helper()
	synctest.Wait()
	b.writeAt(name, content, time.Now())
	b.event(name)
}

// appendTo appends to an open file now and reports it to the Watcher.
func (b *bubble) appendTo(f *os.File, content string) {
	b.t.Helper()
	synctest.Wait()
	if _, err := f.WriteString(content); err != nil {
		b.t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(f.Name(), now, now); err != nil {
		b.t.Fatal(err)
	}
	b.event(filepath.Base(f.Name()))
}

// event tells the Watcher that the file called name changed.
func (b *bubble) event(name string) {
	b.fn.events <- fsnotify.Event{Name: b.path(name), Op: fsnotify.Write}
}

// removed deletes path (and what it holds) and tells the Watcher.
func (b *bubble) removed(path string) {
	b.t.Helper()
	synctest.Wait()
	if err := os.RemoveAll(path); err != nil {
		b.t.Fatal(err)
	}
	b.fn.events <- fsnotify.Event{Name: path, Op: fsnotify.Remove}
}

// received waits until the Watcher is idle and returns the snapshot it
// delivered since the last call, if any.
func (b *bubble) received() (*Snapshot, bool) {
	synctest.Wait()
	select {
	case s := <-b.w.Changes():
		return s, true
	default:
		return nil, false
	}
}
