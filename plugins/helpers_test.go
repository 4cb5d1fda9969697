package plugins

import (
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

const testDebounce = 20 * time.Millisecond

// waitTimeout is generous: the machine may be loaded; a passing test never
// waits this long.
const waitTimeout = 10 * time.Second

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
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

var sentinels = []error{ErrNoDir, ErrNotDir, ErrTooLarge, ErrTooMany, ErrNotRegular, ErrBadName, ErrUnreadable, ErrWatch, ErrUnstable}

func sentinelName(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return strings.TrimPrefix(s.Error(), "plugins: ")
		}
	}
	return err.Error()
}

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
// snapshots seen on the way (including the matching one).
func waitState(t testing.TB, w *Watcher, want state) []*Snapshot {
	t.Helper()
	var seen []*Snapshot
	timeout := time.After(waitTimeout)
	for {
		select {
		case s, ok := <-w.Changes():
			if !ok {
				t.Fatalf("Changes closed while waiting for %+v", want)
			}
			if len(seen) > 0 && s.Seq() <= seen[len(seen)-1].Seq() {
				t.Errorf("snapshot Seq %d after %d, want increasing", s.Seq(), seen[len(seen)-1].Seq())
			}
			seen = append(seen, s)
			if cmp.Diff(want, stateOf(s)) == "" {
				return seen
			}
		case <-timeout:
			t.Fatalf("no snapshot matched within %v; latest differs (-want +got):\n%s", waitTimeout, cmp.Diff(want, stateOf(w.Current())))
			return nil
		}
	}
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
