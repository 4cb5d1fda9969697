package plugins

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// diskState reads the directory directly: what a snapshot must converge to.
func diskState(t *testing.T, dir string) state {
	t.Helper()
	st := state{Modules: map[string]string{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name, err := moduleName(e.Name())
		if err != nil || !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st.Modules[name] = sum(string(b))
	}
	return st
}

// TestWatcherStorm hammers the directory from several goroutines with
// writes, atomic replaces, renames, truncations and removals; once they
// stop, the watcher must deliver a snapshot equal to the disk.
func TestWatcherStorm(t *testing.T) {
	dir := t.TempDir()
	w := newTestWatcher(t, Config{Dir: dir, MaxDelay: 100 * time.Millisecond})
	const workers, ops, files = 4, 300, 12
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 42))
			for i := range ops {
				p := filepath.Join(dir, fmt.Sprintf("m%d.wasm", r.IntN(files)))
				content := fmt.Sprintf("g%d-op%d-%s", g, i, string(make([]byte, r.IntN(4096))))
				switch r.IntN(6) {
				case 0, 1:
					os.WriteFile(p, []byte(content), 0o644)
				case 2:
					tmp := filepath.Join(dir, fmt.Sprintf(".g%d.tmp", g))
					if os.WriteFile(tmp, []byte(content), 0o644) == nil {
						os.Rename(tmp, p)
					}
				case 3:
					os.Rename(p, filepath.Join(dir, fmt.Sprintf("m%d.wasm", r.IntN(files))))
				case 4:
					os.Truncate(p, int64(r.IntN(10)))
				case 5:
					os.Remove(p)
				}
				if i%50 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	waitState(t, w, diskState(t, dir))
}

// TestNoLeaks runs thousands of scans and hundreds of watcher lifecycles
// on real files and fsnotify, and checks that file descriptors come back to
// where they were. (That Close ends every goroutine a Watcher starts is
// TestWatcherCloseEndsGoroutine's, in a synctest bubble.)
func TestNoLeaks(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("m%d.wasm", i)), fmt.Sprint(i))
	}
	writeFile(t, filepath.Join(dir, "big.wasm"), string(make([]byte, 200)))
	os.Symlink("nowhere", filepath.Join(dir, "dangling.wasm"))
	// One watcher first, so that the runtime's poller, which the first
	// fsnotify watcher opens for good, is not counted as a leak.
	if w, err := NewWatcher(Config{Dir: dir, Debounce: time.Millisecond}); err != nil {
		t.Fatal(err)
	} else {
		w.Close()
	}
	fds := openFDs(t)

	cfg, _ := Config{Dir: dir, MaxModuleBytes: 100}.withDefaults()
	sc := newScanner(cfg)
	sc.settle = 0
	for i := range 3000 {
		if i%100 == 0 {
			sc.cache = map[string]cacheEntry{} // force reads, not only stats
		}
		scanDir(t, sc)
	}

	for range 200 {
		w, err := NewWatcher(Config{Dir: dir, Debounce: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}

	// Many rescans by one watcher, each triggered by a real change.
	w, err := NewWatcher(Config{Dir: dir, Debounce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const rescans = 300
	for i := range rescans {
		writeAtomic(t, filepath.Join(dir, "m0.wasm"), fmt.Sprint("v", i))
		waitState(t, w, diskState(t, dir))
	}
	if got := w.stats.scans.Load(); got < rescans {
		t.Errorf("watcher scanned %d times, want at least %d", got, rescans)
	}
	w.Close()

	if got := openFDs(t); got > fds {
		t.Errorf("open file descriptors: %d after, %d before", got, fds)
	}
}
