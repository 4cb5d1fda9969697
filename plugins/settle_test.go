package plugins

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The tests of half-written files run in a testing/synctest bubble, so
// that how slowly a file is written is exact and nothing depends on the
// machine's speed.

const bubbleDebounce = 100 * time.Millisecond

// TestWatcherChunkedWrite writes a module in chunks, more slowly than the
// watcher rescans (MaxDelay forces rescans while the events keep coming):
// no snapshot may hold a partial file, and the write yields one delivery.
func TestWatcherChunkedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		b.start(Config{Debounce: bubbleDebounce, MaxDelay: bubbleDebounce})
		first, _ := b.received()
		scansBefore := b.w.stats.scans.Load()

		full := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
		f, err := os.Create(b.path("big.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		const chunks = 16
		step := len(full) / chunks
		for i := range chunks {
			b.appendTo(f, full[i*step:(i+1)*step])
			time.Sleep(bubbleDebounce / 3) // a slow writer
			if s, ok := b.received(); ok {
				t.Errorf("snapshot %d delivered during the write: %+v", s.seq, stateOf(s))
			}
		}
		f.Close()
		if got := b.w.stats.scans.Load() - scansBefore; got < 3 {
			t.Errorf("the watcher scanned %d times during the write, want several: the test proves nothing", got)
		}

		time.Sleep(2 * bubbleDebounce)
		s, ok := b.received()
		if !ok {
			t.Fatal("the finished write was not delivered")
		}
		if diff := cmp.Diff(state{Modules: mods("big", full)}, stateOf(s)); diff != "" {
			t.Errorf("after the write (-want +got):\n%s", diff)
		}
		if got := s.seq - first.seq; got != 1 {
			t.Errorf("the write made %d deliveries, want 1", got)
		}
	})
}

// TestWatcherStartWaitsForSettling starts the watcher a moment after a
// module was written: the first snapshot must hold it, not leave it out
// for being too fresh.
func TestWatcherStartWaitsForSettling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		b.writeAt("old.wasm", "old", time.Now().Add(-time.Hour))
		b.writeAt("fresh.wasm", "fresh", time.Now().Add(-bubbleDebounce/2))
		start := time.Now()
		b.start(Config{Debounce: bubbleDebounce})
		first, ok := b.received()
		if !ok {
			t.Fatal("no first snapshot")
		}
		if diff := cmp.Diff(state{Modules: mods("old", "old", "fresh", "fresh")}, stateOf(first)); diff != "" {
			t.Errorf("first snapshot (-want +got):\n%s", diff)
		}
		// The bubble's clock: exact, whatever the machine's load.
		if waited, bound := time.Since(start), b.w.cfg.startWait(); waited <= 0 || waited > bound {
			t.Errorf("start waited %v, want more than 0 and at most %v", waited, bound)
		}
	})
}

// TestWatcherStartReportsUnsettled starts the watcher while a module is
// being rewritten and goes on being rewritten: the first snapshot comes
// after a bounded wait and reports the file as a problem; the file causes
// no delivery while it is still being written, and is loaded once it
// settles.
func TestWatcherStartReportsUnsettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		stop, stopped := make(chan struct{}), make(chan struct{})
		// A writer that renames a new version into place every Debounce/4. It
		// sends no events: the watcher's own retries must find the file.
		go func() {
			defer close(stopped)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tmp := b.path(".a.wasm.tmp")
				now := time.Now()
				if os.WriteFile(tmp, []byte(fmt.Sprint("v", i)), 0o644) != nil || os.Chtimes(tmp, now, now) != nil || os.Rename(tmp, b.path("a.wasm")) != nil {
					panic("writing a.wasm")
				}
				time.Sleep(bubbleDebounce / 4)
			}
		}()

		synctest.Wait() // the first version is written
		start := time.Now()
		b.start(Config{Debounce: bubbleDebounce})
		if waited, bound := time.Since(start), b.w.cfg.startWait(); waited > bound {
			t.Errorf("start waited %v, want at most %v", waited, bound)
		}
		first, _ := b.received()
		want := state{Modules: mods(), Problems: []string{"module file is still being written"}}
		if diff := cmp.Diff(want, stateOf(first)); diff != "" {
			t.Errorf("first snapshot (-want +got):\n%s", diff)
		}

		time.Sleep(5 * bubbleDebounce)
		if s, ok := b.received(); ok {
			t.Errorf("snapshot %d delivered while the file is still being written: %+v", s.seq, stateOf(s))
		}

		close(stop)
		<-stopped
		final, err := os.ReadFile(b.path("a.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * bubbleDebounce)
		s, ok := b.received()
		if !ok {
			t.Fatal("the settled file was not delivered")
		}
		if diff := cmp.Diff(state{Modules: mods("a", string(final))}, stateOf(s)); diff != "" {
			t.Errorf("after the writer stopped (-want +got):\n%s", diff)
		}
	})
}

// TestWatcherRescan: a change fsnotify does not report (a network file
// system) is seen after Rescan, and requests made before the rescan runs
// are one rescan.
func TestWatcherRescan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t)
		b.start(Config{Debounce: bubbleDebounce})
		b.received()
		synctest.Wait()
		b.writeAt("a.wasm", "a module", time.Now().Add(-time.Hour)) // no event
		time.Sleep(10 * bubbleDebounce)                             // the bubble's clock
		if s, ok := b.received(); ok {
			t.Fatalf("a change without an event was delivered before Rescan: %v", s.Modules())
		}
		scans := b.w.stats.scans.Load()
		b.w.Rescan()
		b.w.Rescan()
		time.Sleep(10 * bubbleDebounce)
		s, ok := b.received()
		if !ok || len(s.Modules()) != 1 || s.Modules()[0].Name != "a" {
			t.Fatalf("after Rescan: delivered %v (%v), want the snapshot with a", ok, s)
		}
		if n := b.w.stats.scans.Load() - scans; n != 1 {
			t.Errorf("two Rescan requests made %d rescans, want 1", n)
		}
	})
}
