package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testDebounce keeps the tests on real files and fsnotify quick. No test
// depends on it for correctness: they wait for states, not for time.
const testDebounce = 20 * time.Millisecond

// sum is the digest of s, computed here independently of Digest.
func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// writeAtomic writes a file the safe way: a temporary dotfile renamed over
// the target.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scanDir is one scan by sc of its directory, without the Watcher.
func scanDir(t testing.TB, sc *scanner) *Snapshot {
	t.Helper()
	ls, err := sc.list(resolveDir(sc.cfg.Dir))
	if err != nil {
		t.Fatal(err)
	}
	r, err := sc.read(context.Background(), ls, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.snap
}

// state is what a test expects of a snapshot: module name → digest, and
// the sentinel of each problem.
type state struct {
	Modules  map[string]string
	Problems []string
}

func stateOf(s *Snapshot) state {
	st := state{Modules: map[string]string{}}
	for _, m := range s.Modules() {
		st.Modules[m.Name] = m.Digest
	}
	for _, p := range s.Problems() {
		st.Problems = append(st.Problems, sentinelName(p.Err))
	}
	return st
}

var sentinels = []error{ErrNoDir, ErrNotDir, ErrTooLarge, ErrTooMany, ErrNotRegular, ErrBadName, ErrUnreadable, ErrWatch, ErrUnstable, ErrToolConflict, ErrLoad}

func sentinelName(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return strings.TrimPrefix(s.Error(), "plugins: ")
		}
	}
	return err.Error()
}

var noProblems []string

// mods builds the expected modules from name → content.
func mods(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = sum(kv[i+1])
	}
	return m
}

func newTestWatcher(t testing.TB, cfg Config) *Watcher {
	t.Helper()
	if cfg.Debounce == 0 {
		cfg.Debounce = testDebounce
	}
	w, err := NewWatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// waitState receives snapshots until one matches want, and returns the
// snapshots seen on the way (including the matching one). It sets no time
// budget of its own: see beforeDeadline.
func waitState(t testing.TB, w *Watcher, want state) []*Snapshot {
	t.Helper()
	var seen []*Snapshot
	stuck := beforeDeadline(t)
	for {
		select {
		case s, ok := <-w.Changes():
			if !ok {
				t.Fatalf("Changes closed while waiting for %+v", want)
			}
			if len(seen) > 0 && s.seq <= seen[len(seen)-1].seq {
				t.Errorf("snapshot seq %d after %d, want increasing", s.seq, seen[len(seen)-1].seq)
			}
			seen = append(seen, s)
			if cmp.Diff(want, stateOf(s)) == "" {
				return seen
			}
		case <-stuck:
			t.Fatalf("test deadline near and no snapshot matched; latest differs (-want +got):\n%s", cmp.Diff(want, stateOf(w.cur.Load())))
			return nil
		}
	}
}

// beforeDeadline fires shortly before the test binary's own deadline (go
// test -timeout), so that a wait that never ends reports what it saw
// rather than a goroutine dump. It is no time budget: a slow machine only
// makes a passing test slower. Without a deadline it never fires.
func beforeDeadline(t testing.TB) <-chan time.Time {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return nil
	}
	deadline, ok := d.Deadline()
	if !ok {
		return nil
	}
	left := time.Until(deadline)
	return time.After(left - left/20)
}

// openFDs counts this process's open file descriptors (linux only).
func openFDs(t testing.TB) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		return -1
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
