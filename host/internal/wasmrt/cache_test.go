package wasmrt

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/internal/compilecache"
)

// variant is module wasm with a custom section named n appended: the same
// code, another content, so another cache entry.
func variant(wasm []byte, n int) []byte {
	name := fmt.Sprintf("v%d", n)
	out := append([]byte(nil), wasm...)
	out = append(out, 0, byte(1+len(name)+1), byte(len(name)))
	return append(append(out, name...), 0)
}

// cacheConfig is a Config with a compile cache in dir, bounded by maxMiB,
// and a key file of its own outside it.
func cacheConfig(t testing.TB, dir string, maxMiB int) Config {
	return Config{CacheDir: dir, MaxCacheMiB: maxMiB, CacheKeyFile: filepath.Join(t.TempDir(), "key")}
}

// entries returns the names of the cache's entries, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		if strings.HasPrefix(d.Name(), compilecache.EntryPrefix) {
			out = append(out, d.Name())
		}
	}
	return out
}

// onlyEntry returns the path of the one entry in dir.
func onlyEntry(t *testing.T, dir string) string {
	t.Helper()
	es := entries(t, dir)
	if len(es) != 1 {
		t.Fatalf("cache entries %v, want one", es)
	}
	return filepath.Join(dir, es[0])
}

func loadBytes(t *testing.T, r *Runtime, name string, wasm []byte) {
	t.Helper()
	m, err := r.Load(context.Background(), name, wasm, loadLimits)
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	m.Close(context.Background())
}

// counts is what a runtime's compiles found in the cache.
type counts struct{ restored, refused, stored int64 }

func cacheCounts(r *Runtime) counts {
	c := r.disk.Counts()
	return counts{c.Restored, c.Refused, c.Stored}
}

// TestCachePruneRemovesForeignNames: names of the cache's entries that are
// not regular files of this user are removed when the cache is pruned, so
// that a planted file, however large or recent, never counts against the
// bound and never makes real entries go first.
func TestCachePruneRemovesForeignNames(t *testing.T) {
	dir := t.TempDir()
	r := newRuntime(t, cacheConfig(t, dir, 1))
	planted := filepath.Join(dir, compilecache.EntryPrefix+"planted")
	if err := os.WriteFile(planted, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(planted, 1<<30); err != nil { // past the bound, sparse
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(planted, future, future); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Skipf("chown: %v", err)
	}
	pipe := filepath.Join(dir, compilecache.EntryPrefix+"pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "not-an-entry")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	loadBytes(t, r, "ok", wasmFile(t, "ok"))
	got := entries(t, dir)
	if len(got) != 1 || slices.Contains(got, filepath.Base(planted)) || slices.Contains(got, filepath.Base(pipe)) {
		t.Errorf("entries after a prune %v: want the module's alone", got)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file without the entries' prefix was removed: %v", err)
	}
}

// TestCacheWarmLoadReadsEntry: a second runtime on the same cache and key
// compiles nothing: it reads the entry, and wazero is never given the
// shared directory (it holds entry files only) nor leaves its private one
// behind.
func TestCacheWarmLoadReadsEntry(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // where the private directories go
	dir := t.TempDir()
	cfg := cacheConfig(t, dir, 64)
	wasm := wasmFile(t, "ok")
	cold := newRuntime(t, cfg)
	loadBytes(t, cold, "ok", wasm)
	if got, want := cacheCounts(cold), (counts{stored: 1}); got != want {
		t.Errorf("cold load: %+v, want %+v", got, want)
	}
	warm := newRuntime(t, cfg)
	m, err := warm.Load(context.Background(), "ok", wasm, loadLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if got := callText(t, m, "hello", `{}`, testLimits, nil); got != "hello" {
		t.Errorf("call = %q, want hello", got)
	}
	if got, want := cacheCounts(warm), (counts{restored: 1}); got != want {
		t.Errorf("warm load: %+v, want %+v", got, want)
	}
	ds, _ := os.ReadDir(dir)
	for _, d := range ds {
		if !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), compilecache.EntryPrefix) {
			t.Errorf("the shared directory holds %s (%v): only entry files belong there", d.Name(), d.Type())
		}
	}
	if left, _ := os.ReadDir(os.TempDir()); len(left) != 0 {
		t.Errorf("private directories left behind: %v", left)
	}
}

// TestCacheHostileEntries: whatever holds a module's entry name, if it is
// not a regular file of this user, within its bound, authenticated by this
// server's key for this module, it is refused and logged, the module is
// compiled again (one compile, counted) and serves, and its entry is
// replaced by one the next runtime reads.
func TestCacheHostileEntries(t *testing.T) {
	base := wasmFile(t, "ok")
	rewrite := func(f func([]byte) []byte) func(t *testing.T, p string, _ Config) {
		return func(t *testing.T, p string, _ Config) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f(b), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	replace := func(t *testing.T, p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		plant  func(t *testing.T, entry string, cfg Config)
		reason string // in the log line
	}{
		{"named pipe", func(t *testing.T, p string, _ Config) {
			replace(t, p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "a named pipe"},
		{"symbolic link to a valid entry", func(t *testing.T, p string, _ Config) {
			elsewhere := filepath.Join(t.TempDir(), "entry")
			if err := os.Rename(p, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link"},
		{"directory", func(t *testing.T, p string, _ Config) {
			replace(t, p)
			if err := os.MkdirAll(filepath.Join(p, "wazero-dev-amd64-linux"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "a directory"},
		{"device", func(t *testing.T, p string, _ Config) {
			replace(t, p)
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3); err != nil { // /dev/null's numbers
				t.Skipf("mknod: %v", err)
			}
		}, "a device"},
		{"oversized", func(t *testing.T, p string, _ Config) {
			if err := os.Truncate(p, compilecache.MaxEntryBytes(len(base))+1<<30); err != nil { // sparse
				t.Fatal(err)
			}
		}, "more than the"},
		{"owned by another user", func(t *testing.T, p string, _ Config) {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Skipf("chown: %v", err)
			}
		}, "owned by uid 65534"},
		{"writable by others", func(t *testing.T, p string, _ Config) {
			if err := os.Chmod(p, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "writable by group or others"},
		{"truncated", rewrite(func(b []byte) []byte { return b[:len(b)/2] }), "MAC does not match"},
		{"cut to its header", rewrite(func(b []byte) []byte { return b[:6] }), "truncated"}, // magic, version, file count,
		{"empty", rewrite(func([]byte) []byte { return nil }), "truncated"},
		{"garbage", rewrite(func([]byte) []byte { return bytes.Repeat([]byte("not an entry "), 100) }), "MAC does not match"},
		{"flipped code byte", rewrite(func(b []byte) []byte { c := slices.Clone(b); c[len(c)/2] ^= 0x01; return c }), "MAC does not match"},
		{"flipped MAC byte", rewrite(func(b []byte) []byte { c := slices.Clone(b); c[len(c)-1] ^= 0x80; return c }), "MAC does not match"},
		{"copied from another module", func(t *testing.T, p string, cfg Config) {
			other := t.TempDir()
			cfg.CacheDir = other
			loadBytes(t, newRuntime(t, cfg), "v1", variant(base, 1)) // same key, same code, another module
			b, err := os.ReadFile(onlyEntry(t, other))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "MAC does not match"},
		{"written with another key", func(t *testing.T, p string, cfg Config) {
			other := t.TempDir()
			cfg.CacheDir, cfg.CacheKeyFile = other, filepath.Join(t.TempDir(), "key")
			loadBytes(t, newRuntime(t, cfg), "ok", base)
			b, err := os.ReadFile(onlyEntry(t, other))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "MAC does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := cacheConfig(t, dir, 64)
			loadBytes(t, newRuntime(t, cfg), "ok", base)
			entry := onlyEntry(t, dir)
			tc.plant(t, entry, cfg)

			var log bytes.Buffer
			cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
			r := newRuntime(t, cfg)
			m, err := r.Load(context.Background(), "ok", base, loadLimits)
			if err != nil {
				t.Fatalf("Load over the planted entry: %v", err)
			}
			defer m.Close(context.Background())
			if got := callText(t, m, "hello", `{}`, testLimits, nil); got != "hello" {
				t.Errorf("call = %q, want hello", got)
			}
			if got, want := cacheCounts(r), (counts{refused: 1, stored: 1}); got != want {
				t.Errorf("load over the planted entry: %+v, want %+v (refused, compiled once, stored)", got, want)
			}
			if !strings.Contains(log.String(), "entry refused") || !strings.Contains(log.String(), tc.reason) || !strings.Contains(log.String(), "module=ok") {
				t.Errorf("log %q: want a line refusing the entry of ok: %s", log.String(), tc.reason)
			}
			if fi, err := os.Lstat(entry); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the entry after the load: %v, %v; want a regular file", fi, err)
			}
			again := newRuntime(t, cfg)
			loadBytes(t, again, "ok", base)
			if got, want := cacheCounts(again), (counts{restored: 1}); got != want {
				t.Errorf("the next load: %+v, want %+v (the replaced entry read)", got, want)
			}
		})
	}
}

// TestCacheDirMustBePrivate: a cache directory other users may write is
// refused (the server would run the native code it holds).
func TestCacheDirMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := cacheConfig(t, dir, 1)
	cfg.MaxMemoryMiB, cfg.MaxSnapshotMiB = 16, 16
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("New on a world-writable cache: %v, want a refusal", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New on a private cache: %v", err)
	}
	r.Close(context.Background())
}
