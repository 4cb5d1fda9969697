package wasmrt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/internal/compilecache"
)

// cacheConfig is a Config with a compile cache in dir, bounded by maxMiB,
// and a key file of its own outside it.
func cacheConfig(t testing.TB, dir string, maxMiB int) Config {
	return Config{CacheDir: dir, MaxCacheMiB: maxMiB, CacheKeyFile: filepath.Join(t.TempDir(), "key")}
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
