package wasmrt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// variant is module wasm with a custom section named n appended: the same
// code, another content, so another cache entry.
func variant(wasm []byte, n int) []byte {
	name := fmt.Sprintf("v%d", n)
	out := append([]byte(nil), wasm...)
	out = append(out, 0, byte(1+len(name)+1), byte(len(name)))
	return append(append(out, name...), 0)
}

// entries returns the cache's entry directories, sorted.
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

func loadBytes(t *testing.T, r *Runtime, name string, wasm []byte) {
	t.Helper()
	m, err := r.Load(context.Background(), name, wasm, loadLimits)
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	m.Close(context.Background())
}

// TestCacheEvictsLeastRecentlyUsed: the cache stays within its bound by
// removing the entries used longest ago, and a load marks its entry used.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	r := newRuntime(t, Config{CacheDir: dir, MaxCacheMiB: 1})
	base := wasmFile(t, "ok")
	loadBytes(t, r, "v", variant(base, 99))
	one := dirSize(filepath.Join(dir, entries(t, dir)[0]))
	if one == 0 {
		t.Fatal("the first load wrote nothing to the cache")
	}
	r.disk.maxBytes = 3 * one // room for three entries
	if err := os.RemoveAll(filepath.Join(dir, entries(t, dir)[0])); err != nil {
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

// TestCacheCorruptEntryIgnored: an entry wazero cannot read (garbage,
// truncated, or claiming more code than it holds) is removed and the module
// compiled again; the load succeeds and the module runs.
func TestCacheCorruptEntryIgnored(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(b []byte) []byte
	}{
		{"garbage", func(b []byte) []byte { return []byte("not a compiled module at all") }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"flipped code byte", func(b []byte) []byte { c := slices.Clone(b); c[len(c)-64] ^= 0xff; return c }},
		{"huge length", func(b []byte) []byte {
			c := slices.Clone(b)
			for i := 6 + 1 + 20; i < min(len(c), 64); i++ { // past the magic and version: counts and offsets
				c[i] = 0xff
			}
			return c
		}},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			wasm := wasmFile(t, "ok")
			loadBytes(t, newRuntime(t, Config{CacheDir: dir, MaxCacheMiB: 64}), "ok", wasm)
			n := 0
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, _ := os.ReadFile(p)
					if err := os.WriteFile(p, tc.corrupt(b), 0o600); err != nil {
						t.Fatal(err)
					}
					n++
				}
				return nil
			})
			if n == 0 {
				t.Fatal("no cache file to corrupt")
			}
			r := newRuntime(t, Config{CacheDir: dir, MaxCacheMiB: 64})
			m, err := r.Load(context.Background(), "ok", wasm, loadLimits)
			if err != nil {
				t.Fatalf("Load over a corrupt entry: %v", err)
			}
			defer m.Close(context.Background())
			if got := callText(t, m, "hello", `{}`, testLimits, nil); got != "hello" {
				t.Errorf("call after loading over a corrupt entry = %q, want hello", got)
			}
		})
	}
}

// TestCacheSharedByRuntimes: runtimes sharing one small cache load
// modules at once, evicting each other's entries; every load succeeds.
func TestCacheSharedByRuntimes(t *testing.T) {
	dir := t.TempDir()
	base := wasmFile(t, "ok")
	var rs []*Runtime
	for range 3 {
		r := newRuntime(t, Config{CacheDir: dir, MaxCacheMiB: 1})
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
	cfg := Config{CacheDir: dir, MaxCacheMiB: 1, MaxMemoryMiB: 16, MaxSnapshotMiB: 16}
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
