package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/google/go-cmp/cmp"
)

func TestWatcherScript(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.wasm")
	writeFile(t, a, "a1")
	w := newTestWatcher(t, Config{Dir: dir, MaxModuleBytes: 1000})
	waitState(t, w, state{Modules: mods("a", "a1"), Problems: noProblems})

	steps := []struct {
		name string
		do   func(t *testing.T)
		want state
	}{
		{"write", func(t *testing.T) { writeFile(t, filepath.Join(dir, "b.wasm"), "b1") },
			state{Modules: mods("a", "a1", "b", "b1")}},
		{"rename-over (editor save)", func(t *testing.T) {
			// vim: write a swap file, rename it over the original.
			writeFile(t, filepath.Join(dir, ".a.wasm.swp"), "swap")
			writeFile(t, filepath.Join(dir, "a.wasm~"), "a1")
			writeAtomic(t, a, "a2")
			os.Remove(filepath.Join(dir, ".a.wasm.swp"))
		}, state{Modules: mods("a", "a2", "b", "b1")}},
		{"truncate", func(t *testing.T) {
			if err := os.Truncate(filepath.Join(dir, "b.wasm"), 0); err != nil {
				t.Fatal(err)
			}
		}, state{Modules: mods("a", "a2", "b", "")}},
		{"corrupt", func(t *testing.T) { writeFile(t, filepath.Join(dir, "b.wasm"), "\x00asm garbage") },
			state{Modules: mods("a", "a2", "b", "\x00asm garbage")}},
		{"too large", func(t *testing.T) { writeFile(t, filepath.Join(dir, "c.wasm"), strings.Repeat("c", 1001)) },
			state{Modules: mods("a", "a2", "b", "\x00asm garbage"), Problems: []string{"module file too large"}}},
		{"rename", func(t *testing.T) {
			os.Remove(filepath.Join(dir, "c.wasm"))
			if err := os.Rename(filepath.Join(dir, "b.wasm"), filepath.Join(dir, "d.wasm")); err != nil {
				t.Fatal(err)
			}
		}, state{Modules: mods("a", "a2", "d", "\x00asm garbage")}},
		{"remove", func(t *testing.T) { os.Remove(a) },
			state{Modules: mods("d", "\x00asm garbage")}},
		{"subdirectory ignored, then emptied", func(t *testing.T) {
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			writeFile(t, filepath.Join(dir, "sub", "x.wasm"), "x")
			os.Remove(filepath.Join(dir, "d.wasm"))
		}, state{Modules: mods()}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			waitState(t, w, st.want)
		})
	}
}

// TestWatcherSymlinkSwitch follows a deploy that retargets the directory's
// symbolic link atomically, and then keeps watching the new target only.
func TestWatcherSymlinkSwitch(t *testing.T) {
	root := t.TempDir()
	v1, v2 := filepath.Join(root, "releases", "v1"), filepath.Join(root, "releases", "v2")
	for _, d := range []string{v1, v2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(v1, "a.wasm"), "a1")
	writeFile(t, filepath.Join(v2, "a.wasm"), "a2")
	writeFile(t, filepath.Join(v2, "b.wasm"), "b2")
	tools := filepath.Join(root, "tools")
	if err := os.Symlink("releases/v1", tools); err != nil {
		t.Fatal(err)
	}
	w := newTestWatcher(t, Config{Dir: tools})
	waitState(t, w, state{Modules: mods("a", "a1")})

	// ln -s releases/v2 tools.new && mv -T tools.new tools
	if err := os.Symlink("releases/v2", filepath.Join(root, "tools.new")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "tools.new"), tools); err != nil {
		t.Fatal(err)
	}
	waitState(t, w, state{Modules: mods("a", "a2", "b", "b2")})
	if got := w.cur.Load().resolved; got != v2 {
		t.Errorf("resolved directory %s, want %s", got, v2)
	}
	if m, _ := w.cur.Load().module("b"); m.Path != filepath.Join(v2, "b.wasm") {
		t.Errorf("Path = %s, want it in %s", m.Path, v2)
	}

	// The old release is no longer watched; the new one is.
	writeFile(t, filepath.Join(v1, "old.wasm"), "old")
	writeFile(t, filepath.Join(v2, "c.wasm"), "c2")
	seen := waitState(t, w, state{Modules: mods("a", "a2", "b", "b2", "c", "c2")})
	for _, s := range seen {
		if _, ok := s.module("old"); ok {
			t.Errorf("snapshot %d holds a module of the old release", s.seq)
		}
	}
}

// TestWatcherDirLifecycle follows the directory as it is deleted, created
// again and replaced after start: each state is a snapshot.
func TestWatcherDirLifecycle(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tools")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newTestWatcher(t, Config{Dir: dir})
	waitState(t, w, state{Modules: mods()})

	t.Run("written", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "a.wasm"), "a")
		waitState(t, w, state{Modules: mods("a", "a")})
	})
	t.Run("deleted", func(t *testing.T) {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		waitState(t, w, state{Modules: mods(), Problems: []string{"module directory does not exist"}})
	})
	t.Run("created again", func(t *testing.T) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		waitState(t, w, state{Modules: mods()})
		writeFile(t, filepath.Join(dir, "b.wasm"), "b")
		waitState(t, w, state{Modules: mods("b", "b")})
	})
	t.Run("replaced by rename", func(t *testing.T) {
		next := filepath.Join(root, "tools.next")
		if err := os.Mkdir(next, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(next, "c.wasm"), "c")
		if err := os.Rename(dir, filepath.Join(root, "tools.old")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, dir); err != nil {
			t.Fatal(err)
		}
		waitState(t, w, state{Modules: mods("c", "c")})
		writeFile(t, filepath.Join(dir, "d.wasm"), "d")
		waitState(t, w, state{Modules: mods("c", "c", "d", "d")})
	})
}

// TestWatcherParentRemoved deletes the directory and its parent while
// watching: the watcher polls until it can watch again.
func TestWatcherParentRemoved(t *testing.T) {
	root := t.TempDir()
	srv := filepath.Join(root, "srv")
	dir := filepath.Join(srv, "tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newTestWatcher(t, Config{Dir: dir, RetryInterval: 30 * time.Millisecond})
	waitState(t, w, state{Modules: mods()})
	if err := os.RemoveAll(srv); err != nil {
		t.Fatal(err)
	}
	waitState(t, w, state{Modules: mods(), Problems: []string{"module directory does not exist", "cannot watch the module directory"}})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.wasm"), "a")
	waitState(t, w, state{Modules: mods("a", "a")})
	// Now watched, not polled: a change still arrives.
	writeFile(t, filepath.Join(dir, "b.wasm"), "b")
	waitState(t, w, state{Modules: mods("a", "a", "b", "b")})
}

// TestWatcherParentDeletedLater deletes the directory, then its parent,
// each with its own event: the parent's own event must make the watcher
// notice that its watch is gone and poll.
func TestWatcherParentDeletedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		srv := filepath.Join(b.dir, "srv")
		b.dir = filepath.Join(srv, "tools")
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b.start(Config{Debounce: bubbleDebounce, RetryInterval: 10 * bubbleDebounce})
		<-b.w.Changes()

		b.removed(b.dir)
		time.Sleep(2 * bubbleDebounce)
		s, _ := b.received()
		if diff := cmp.Diff(state{Modules: mods(), Problems: []string{"module directory does not exist"}}, stateOf(s)); diff != "" {
			t.Fatalf("directory deleted (-want +got):\n%s", diff)
		}
		b.removed(srv)
		time.Sleep(2 * bubbleDebounce)
		s, _ = b.received()
		if diff := cmp.Diff(state{Modules: mods(), Problems: []string{"module directory does not exist", "cannot watch the module directory"}}, stateOf(s)); diff != "" {
			t.Fatalf("parent deleted (-want +got):\n%s", diff)
		}

		// Nothing is watched: only polling can see the directory come back.
		synctest.Wait()
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b.writeAt("a.wasm", "a", time.Now())
		time.Sleep(10*bubbleDebounce + 2*bubbleDebounce)
		s, _ = b.received()
		if diff := cmp.Diff(state{Modules: mods("a", "a")}, stateOf(s)); diff != "" {
			t.Errorf("directory back (-want +got):\n%s", diff)
		}
	})
}

// TestStartDirErrors: a directory that cannot be read at start is an error
// of NewWatcher and Scan that names it, not a problem of a snapshot.
func TestStartDirErrors(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	writeFile(t, file, "x")
	if err := os.Symlink("nowhere", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", filepath.Join(root, "link-to-file")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want error
	}{
		{filepath.Join(root, "missing"), ErrNoDir},
		{filepath.Join(root, "no", "parent"), ErrNoDir},
		{filepath.Join(root, "dangling"), ErrNoDir},
		{file, ErrNotDir},
		{filepath.Join(root, "link-to-file"), ErrNotDir},
	}
	if os.Getuid() != 0 { // root reads any directory
		unreadable := filepath.Join(root, "unreadable")
		if err := os.Mkdir(unreadable, 0); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			dir  string
			want error
		}{unreadable, ErrUnreadable})
	}
	for _, tt := range tests {
		w, err := NewWatcher(Config{Dir: tt.dir, Debounce: testDebounce})
		if err == nil {
			w.Close()
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.dir) {
			t.Errorf("NewWatcher(%s): error %v, want one wrapping %v that names the directory", tt.dir, err, tt.want)
		}
		if _, err := Scan(t.Context(), Config{Dir: tt.dir}); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.dir) {
			t.Errorf("Scan(%s): error %v, want one wrapping %v that names the directory", tt.dir, err, tt.want)
		}
	}
}

// TestWatcherCoalesces lets changes pile up without receiving: the channel
// holds only the latest snapshot.
func TestWatcherCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		b.start(Config{Debounce: bubbleDebounce})
		<-b.w.Changes() // the first, empty snapshot
		for i := range 5 {
			b.write("a.wasm", strings.Repeat("a", i+1))
			time.Sleep(2 * bubbleDebounce) // the debounce passes; the file settles
			synctest.Wait()
			if m, ok := b.w.cur.Load().module("a"); !ok || m.Size != int64(i+1) {
				t.Fatalf("version %d is not current: %+v", i+1, stateOf(b.w.cur.Load()))
			}
		}
		s := <-b.w.Changes()
		if m, _ := s.module("a"); m.Size != 5 {
			t.Errorf("coalesced snapshot has a of size %d, want the latest, 5", m.Size)
		}
		select {
		case s := <-b.w.Changes():
			t.Errorf("a second snapshot (seq %d) was queued", s.seq)
		default:
		}
	})
}

func TestWatcherClose(t *testing.T) {
	w, err := NewWatcher(Config{Dir: t.TempDir(), Debounce: testDebounce})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for range w.Changes() { // drains the buffered snapshot, then ends
	}
	if w.cur.Load() == nil {
		t.Error("no current snapshot after Close, want the last one")
	}
}

// TestWatcherCloseEndsGoroutine starts and closes watchers, some with a
// rescan pending: the bubble ends only if every goroutine they started
// has ended.
func TestWatcherCloseEndsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		for i := range 50 {
			cfg, _ := Config{Dir: b.dir, Debounce: bubbleDebounce}.withDefaults()
			fn := newFakeNotifier()
			w, err := startWatcher(cfg, fn, fn.events, fn.errs)
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 1 {
				fn.events <- fsnotify.Event{Name: b.path("a.wasm"), Op: fsnotify.Create}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
