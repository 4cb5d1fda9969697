package wasmrt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
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
		if strings.HasPrefix(d.Name(), entryPrefix) {
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
	return counts{r.disk.restored.Load(), r.disk.refused.Load(), r.disk.stored.Load()}
}

// TestCacheEvictsLeastRecentlyUsed: the cache stays within its bound by
// removing the entries used longest ago, and a load marks its entry used.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	r := newRuntime(t, cacheConfig(t, dir, 1))
	base := wasmFile(t, "ok")
	loadBytes(t, r, "v", variant(base, 99))
	fi, err := os.Stat(onlyEntry(t, dir))
	if err != nil || fi.Size() == 0 {
		t.Fatalf("the first load wrote no entry: %v", err)
	}
	r.disk.maxBytes = 3 * fi.Size() // room for three entries
	if err := os.Remove(onlyEntry(t, dir)); err != nil {
		t.Fatal(err)
	}

	// name[i] is the entry of variant i: the one its load added.
	name := map[int]string{}
	add := func(i int) {
		before := entries(t, dir)
		loadBytes(t, r, fmt.Sprint(i), variant(base, i))
		for _, e := range entries(t, dir) {
			if !slices.Contains(before, e) {
				name[i] = e
			}
		}
		if name[i] == "" {
			t.Fatalf("loading variant %d added no entry", i)
		}
	}
	for i := range 3 {
		add(i)
	}
	// Used at known times: 1 longest ago, then 2, then 0.
	t0 := time.Now().Add(-time.Hour)
	for i, age := range map[int]time.Duration{1: 0, 2: time.Minute, 0: 2 * time.Minute} {
		if err := os.Chtimes(filepath.Join(dir, name[i]), t0.Add(age), t0.Add(age)); err != nil {
			t.Fatal(err)
		}
	}
	add(3)
	got := entries(t, dir)
	want := []string{name[0], name[2], name[3]}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("entries after the fourth load %v, want %v (1, used longest ago, evicted)", got, want)
	}

	// Loading 2 again makes it the most recent: 0 goes next.
	loadBytes(t, r, "2", variant(base, 2))
	add(4)
	if got := entries(t, dir); slices.Contains(got, name[0]) || !slices.Contains(got, name[2]) || len(got) != 3 {
		t.Errorf("entries %v: want 0 evicted, 2 kept, three in all", got)
	}
}

// TestCachePruneRemovesForeignNames: names of the cache's entries that are
// not regular files of this user are removed when the cache is pruned, so
// that a planted file, however large or recent, never counts against the
// bound and never makes real entries go first.
func TestCachePruneRemovesForeignNames(t *testing.T) {
	dir := t.TempDir()
	r := newRuntime(t, cacheConfig(t, dir, 1))
	planted := filepath.Join(dir, entryPrefix+"planted")
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
	pipe := filepath.Join(dir, entryPrefix+"pipe")
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
		if !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), entryPrefix) {
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
			if err := os.Truncate(p, maxEntryBytes(len(base))+1<<30); err != nil { // sparse
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
		{"cut to its header", rewrite(func(b []byte) []byte { return b[:entryHeadSize] }), "truncated"},
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

// TestCacheEntryWazeroRefuses: an entry that passes every check of the
// host but that wazero cannot read (the key is known, the body is not
// what wazero wrote) fails the compile, is removed, and the module is
// compiled in memory: a cache is never a reason to refuse a module.
func TestCacheEntryWazeroRefuses(t *testing.T) {
	base := wasmFile(t, "ok")
	for _, tc := range []struct {
		name   string
		mangle func([]byte) []byte
	}{
		{"garbage", func([]byte) []byte { return []byte("not a compiled module at all") }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"flipped code byte", func(b []byte) []byte { c := slices.Clone(b); c[len(c)-64] ^= 0xff; return c }},
		{"huge offsets", func(b []byte) []byte {
			// Past wazero's magic, version and function count, which
			// are left alone: a function count of 0xffffffff makes
			// wazero allocate 32 GiB, and the process dies of it
			// (TestCacheHostileEntries keeps such bytes from wazero).
			c := slices.Clone(b)
			for i := 6 + 1 + 20; i < min(len(c), 64); i++ {
				c[i] = 0xff
			}
			return c
		}},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := cacheConfig(t, dir, 64)
			first := newRuntime(t, cfg)
			loadBytes(t, first, "ok", base)
			entry := onlyEntry(t, dir)
			data, err := os.ReadFile(entry)
			if err != nil {
				t.Fatal(err)
			}
			digest := instrumentedDigest(t, base, entry)
			files, err := openEntry(first.disk.key, digest, data)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w := newEntryWriter(&buf, first.disk.key, digest, len(files))
			for _, f := range files {
				b := tc.mangle(f.data)
				w.add(f.name, int64(len(b)), bytes.NewReader(b))
			}
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(entry, buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}

			r := newRuntime(t, cfg)
			m, err := r.Load(context.Background(), "ok", base, loadLimits)
			if err != nil {
				t.Fatalf("Load over an entry wazero cannot read: %v", err)
			}
			defer m.Close(context.Background())
			if got := callText(t, m, "hello", `{}`, testLimits, nil); got != "hello" {
				t.Errorf("call = %q, want hello", got)
			}
			if got := cacheCounts(r); got.restored != 1 || got.refused != 0 {
				t.Errorf("counts %+v: want the entry passed to wazero once", got)
			}
			// wazero either failed the compile (the entry is removed, the
			// module compiled in memory) or took the entry for a stale one
			// and compiled (its new entry replaced it).
			if b, err := os.ReadFile(entry); err == nil && bytes.Equal(b, buf.Bytes()) {
				t.Errorf("the entry wazero could not read is still there")
			}
		})
	}
}

// instrumentedDigest is the digest of wasm as Load compiles it (guarded,
// its data merged), checked against the name of its entry.
func instrumentedDigest(t *testing.T, wasm []byte, entry string) [sha256.Size]byte {
	t.Helper()
	g, err := guardModule(wasm, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(wasmcode.MergeDataSection(g.Wasm))
	if want := entryPrefix + hex.EncodeToString(d[:16]); filepath.Base(entry) != want {
		t.Fatalf("entry %s, want %s: Load instruments modules otherwise than this test", filepath.Base(entry), want)
	}
	return d
}

// TestCacheSharedByRuntimes: runtimes sharing one small cache load
// modules at once, evicting each other's entries; every load succeeds.
func TestCacheSharedByRuntimes(t *testing.T) {
	dir := t.TempDir()
	cfg := cacheConfig(t, dir, 1)
	base := wasmFile(t, "ok")
	var rs []*Runtime
	for range 3 {
		r := newRuntime(t, cfg)
		r.disk.maxBytes = 1 // every load evicts every other entry
		rs = append(rs, r)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*20)
	for i, r := range rs {
		wg.Go(func() {
			for j := range 20 {
				m, err := r.Load(context.Background(), "ok", variant(base, (i+j)%5), loadLimits)
				if err != nil {
					errs <- err
					continue
				}
				m.Close(context.Background())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Load: %v", err)
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
