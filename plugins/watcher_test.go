package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var noProblems []string

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

// TestWatcherChunkedWrite writes a module in chunks, more slowly than the
// debounce interval would allow if only events were counted: no delivered
// snapshot may contain a partial file, and the write yields one delivery.
func TestWatcherChunkedWrite(t *testing.T) {
	dir := t.TempDir()
	w := newTestWatcher(t, Config{Dir: dir})
	waitState(t, w, state{Modules: mods()})

	full := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	f, err := os.Create(filepath.Join(dir, "big.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	const chunks = 16
	step := len(full) / chunks
	for i := 0; i < chunks; i++ {
		if _, err := f.WriteString(full[i*step : (i+1)*step]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(testDebounce / 4) // a slow writer, not synchronisation
	}
	f.Close()
	seen := waitState(t, w, state{Modules: mods("big", full)})
	for _, s := range seen {
		if m, ok := s.Module("big"); ok && m.Digest != sum(full) {
			t.Errorf("snapshot %d holds a partial big.wasm (%d bytes)", s.Seq(), m.Size)
		}
	}
	if len(seen) != 1 {
		t.Errorf("a chunked write delivered %d snapshots, want 1", len(seen))
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
	if got := w.Current().ResolvedDir(); got != v2 {
		t.Errorf("ResolvedDir = %s, want %s", got, v2)
	}
	if m, _ := w.Current().Module("b"); m.Path != filepath.Join(v2, "b.wasm") {
		t.Errorf("Path = %s, want it in %s", m.Path, v2)
	}

	// The old release is no longer watched; the new one is.
	writeFile(t, filepath.Join(v1, "old.wasm"), "old")
	writeFile(t, filepath.Join(v2, "c.wasm"), "c2")
	seen := waitState(t, w, state{Modules: mods("a", "a2", "b", "b2", "c", "c2")})
	for _, s := range seen {
		if _, ok := s.Module("old"); ok {
			t.Errorf("snapshot %d holds a module of the old release", s.Seq())
		}
	}
}

func TestWatcherDirLifecycle(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tools")
	w := newTestWatcher(t, Config{Dir: dir})
	waitState(t, w, state{Modules: mods(), Problems: []string{"module directory does not exist"}})

	t.Run("created after start", func(t *testing.T) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
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

// TestWatcherParentMissing starts with not even the parent directory: the
// watcher polls until it can watch.
func TestWatcherParentMissing(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "srv", "tools")
	w := newTestWatcher(t, Config{Dir: dir, RetryInterval: 30 * time.Millisecond})
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

// TestWatcherCoalesces lets changes pile up without receiving: the channel
// holds only the latest snapshot.
func TestWatcherCoalesces(t *testing.T) {
	dir := t.TempDir()
	w := newTestWatcher(t, Config{Dir: dir})
	<-w.Changes() // the first, empty snapshot
	for i := range 5 {
		writeFile(t, filepath.Join(dir, "a.wasm"), strings.Repeat("a", i+1))
		// Wait for the watcher to have taken each version, without receiving.
		deadline := time.Now().Add(waitTimeout)
		for {
			if m, ok := w.Current().Module("a"); ok && m.Size == int64(i+1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("version %d never became current", i+1)
			}
			time.Sleep(time.Millisecond) // polling Current, which has no channel
		}
	}
	s := <-w.Changes()
	if m, _ := s.Module("a"); m.Size != 5 {
		t.Errorf("coalesced snapshot has a of size %d, want the latest, 5", m.Size)
	}
	select {
	case s := <-w.Changes():
		t.Errorf("a second snapshot (seq %d) was queued", s.Seq())
	default:
	}
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
	if w.Current() == nil {
		t.Error("Current() = nil after Close, want the last snapshot")
	}
}
