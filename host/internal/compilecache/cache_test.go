package compilecache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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

	"github.com/tetratelabs/wazero"
)

// answer is a module of one function that returns 42, so that wazero has
// native code to cache.
var answer = []byte{
	0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00,
	0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type: () -> i32
	0x03, 0x02, 0x01, 0x00, // function 0 of type 0
	0x07, 0x05, 0x01, 0x01, 'f', 0x00, 0x00, // export "f"
	0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, 0x2a, 0x0b, // i32.const 42
}

// compile compiles wasm as the runtime does (see the package doc): in a
// stage of c, publishing what wazero wrote, dropping the entry when wazero
// could not read it.
func compile(c *Cache, wasm []byte) error {
	ctx := context.Background()
	s := c.Stage("answer", wasm)
	if s == nil {
		return errors.New("no stage: the disk cannot be used")
	}
	defer s.Close()
	cache, err := wazero.NewCompilationCacheWithDir(s.Dir())
	if err != nil {
		return err
	}
	defer cache.Close(ctx)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
	defer rt.Close(ctx)
	_, err = rt.CompileModule(ctx, wasm)
	switch {
	case err == nil:
		s.Publish()
	case Fault(err):
		s.Drop()
	}
	return err
}

// mustCompile compiles wasm in a stage of c.
func mustCompile(t *testing.T, c *Cache, wasm []byte) {
	t.Helper()
	if err := compile(c, wasm); err != nil {
		t.Fatalf("compile: %v", err)
	}
}

// testCache opens a cache in dir with a key file of its own outside it.
func testCache(t *testing.T, dir string) *Cache {
	return testCacheKey(t, dir, filepath.Join(t.TempDir(), "key"))
}

// testCacheKey opens a cache in dir with its key in keyFile, bounded by
// 1 MiB.
func testCacheKey(t *testing.T, dir, keyFile string) *Cache {
	t.Helper()
	c, err := Open(dir, 1, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// variant is module wasm with a custom section named n appended: the same
// code, another content, so another cache entry.
func variant(wasm []byte, n int) []byte {
	name := fmt.Sprintf("v%d", n)
	out := append([]byte(nil), wasm...)
	out = append(out, 0, byte(1+len(name)+1), byte(len(name)))
	return append(append(out, name...), 0)
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
		if strings.HasPrefix(d.Name(), EntryPrefix) {
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

// TestEntryWazeroRefuses: an entry that passes every check of the cache
// but that wazero cannot read (the key is known, the body is not what
// wazero wrote) is either refused by wazero with an error Fault reports,
// after which Drop removes it, or taken by wazero for a stale one and
// replaced: a cache entry never makes a module fail for good.
func TestEntryWazeroRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func([]byte) []byte
	}{
		{"garbage", func([]byte) []byte { return []byte("not a compiled module at all") }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"flipped code byte", func(b []byte) []byte { c := slices.Clone(b); c[len(c)-8] ^= 0xff; return c }},
		{"huge offsets", func(b []byte) []byte {
			// Past wazero's magic, version and function count, which
			// are left alone: a function count of 0xffffffff makes
			// wazero allocate 32 GiB, and the process dies of it (the
			// MAC keeps such bytes from wazero: TestEntryDecodeRefuses).
			c := slices.Clone(b)
			for i := 6 + 1 + 20; i < min(len(c), 64); i++ {
				c[i] = 0xff
			}
			return c
		}},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, keyFile := t.TempDir(), filepath.Join(t.TempDir(), "key")
			open := func() *Cache { return testCacheKey(t, dir, keyFile) }
			first := open()
			if err := compile(first, answer); err != nil {
				t.Fatal(err)
			}
			if got := first.Counts(); got != (Counts{Stored: 1}) {
				t.Fatalf("first compile: %+v, want one entry stored", got)
			}
			digest := sha256.Sum256(answer)
			entry := filepath.Join(dir, EntryPrefix+hex.EncodeToString(digest[:16]))
			data, err := os.ReadFile(entry)
			if err != nil {
				t.Fatal(err)
			}
			files, err := openEntry(first.key, digest, data)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w := newEntryWriter(&buf, first.key, digest, len(files))
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

			c := open()
			err = compile(c, answer)
			if err != nil && !Fault(err) {
				t.Fatalf("compile over an entry wazero cannot read: %v, which Fault does not take for the cache's", err)
			}
			if got := c.Counts(); got.Restored != 1 || got.Refused != 0 {
				t.Errorf("counts %+v: want the entry passed to wazero once", got)
			}
			if b, err := os.ReadFile(entry); err == nil && bytes.Equal(b, buf.Bytes()) {
				t.Errorf("the entry wazero could not read is still there")
			}
			if err != nil {
				// The runtime then compiles in memory; here a stage again, the entry
				// gone: wazero compiles and writes a new one.
				if err := compile(c, answer); err != nil {
					t.Errorf("the compile after the entry was dropped: %v", err)
				}
			}
		})
	}
}

// TestCacheEvictsLeastRecentlyUsed: the cache stays within its bound by
// removing the entries used longest ago, and a compile that reads an entry marks it used.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	r := testCache(t, dir)
	base := answer
	mustCompile(t, r, variant(base, 99))
	fi, err := os.Stat(onlyEntry(t, dir))
	if err != nil || fi.Size() == 0 {
		t.Fatalf("the first compile wrote no entry: %v", err)
	}
	r.maxBytes = 3 * fi.Size() // room for three entries
	if err := os.Remove(onlyEntry(t, dir)); err != nil {
		t.Fatal(err)
	}

	// name[i] is the entry of variant i: the one its compile added.
	name := map[int]string{}
	add := func(i int) {
		before := entries(t, dir)
		mustCompile(t, r, variant(base, i))
		for _, e := range entries(t, dir) {
			if !slices.Contains(before, e) {
				name[i] = e
			}
		}
		if name[i] == "" {
			t.Fatalf("compiling variant %d added no entry", i)
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
		t.Errorf("entries after the fourth compile %v, want %v (1, used longest ago, evicted)", got, want)
	}

	// Compiling 2 again makes it the most recent: 0 goes next.
	mustCompile(t, r, variant(base, 2))
	add(4)
	if got := entries(t, dir); slices.Contains(got, name[0]) || !slices.Contains(got, name[2]) || len(got) != 3 {
		t.Errorf("entries %v: want 0 evicted, 2 kept, three in all", got)
	}
}

// TestCacheSharedByServers: caches of several servers sharing one small cache compile
// modules at once, evicting each other's entries; every compile succeeds.
func TestCacheSharedByServers(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "key")
	var rs []*Cache
	for range 3 {
		r := testCacheKey(t, dir, keyFile)
		r.maxBytes = 1 // every compile evicts every other entry
		rs = append(rs, r)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*20)
	for i, r := range rs {
		wg.Go(func() {
			for j := range 20 {
				if err := compile(r, variant(answer, (i+j)%5)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("compile: %v", err)
	}
}

// TestCachePruneRemovesForeignNames: names of the cache's entries that are
// not regular files of this user are removed when the cache is pruned, so
// that a planted file, however large or recent, never counts against the
// bound and never makes real entries go first.
func TestCachePruneRemovesForeignNames(t *testing.T) {
	dir := t.TempDir()
	r := testCache(t, dir)
	planted := filepath.Join(dir, EntryPrefix+"planted")
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
	pipe := filepath.Join(dir, EntryPrefix+"pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "not-an-entry")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCompile(t, r, answer)
	got := entries(t, dir)
	if len(got) != 1 || slices.Contains(got, filepath.Base(planted)) || slices.Contains(got, filepath.Base(pipe)) {
		t.Errorf("entries after a prune %v: want the module's alone", got)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file without the entries' prefix was removed: %v", err)
	}
}

// TestCacheHostileEntries: whatever holds a module's entry name, if it is
// not a regular file of this user, within its bound, authenticated by this
// server's key for this module, it is refused and logged, the module is
// compiled again (one compile, counted), and its entry is replaced by one
// the next server reads.
func TestCacheHostileEntries(t *testing.T) {
	base := answer
	rewrite := func(f func([]byte) []byte) func(t *testing.T, p, _ string) {
		return func(t *testing.T, p, _ string) {
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
		plant  func(t *testing.T, entry, keyFile string)
		reason string // in the log line
	}{
		{"named pipe", func(t *testing.T, p, _ string) {
			replace(t, p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "a named pipe"},
		{"symbolic link to a valid entry", func(t *testing.T, p, _ string) {
			elsewhere := filepath.Join(t.TempDir(), "entry")
			if err := os.Rename(p, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link"},
		{"directory", func(t *testing.T, p, _ string) {
			replace(t, p)
			if err := os.MkdirAll(filepath.Join(p, "wazero-dev-amd64-linux"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "a directory"},
		{"device", func(t *testing.T, p, _ string) {
			replace(t, p)
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3); err != nil { // /dev/null's numbers
				t.Skipf("mknod: %v", err)
			}
		}, "a device"},
		{"oversized", func(t *testing.T, p, _ string) {
			if err := os.Truncate(p, maxEntryBytes(len(base))+1<<30); err != nil { // sparse
				t.Fatal(err)
			}
		}, "more than the"},
		{"owned by another user", func(t *testing.T, p, _ string) {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Skipf("chown: %v", err)
			}
		}, "owned by uid 65534"},
		{"writable by others", func(t *testing.T, p, _ string) {
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
		{"copied from another module", func(t *testing.T, p, keyFile string) {
			other := t.TempDir()
			mustCompile(t, testCacheKey(t, other, keyFile), variant(base, 1)) // same key, same code, another module
			b, err := os.ReadFile(onlyEntry(t, other))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "MAC does not match"},
		{"written with another key", func(t *testing.T, p, _ string) {
			other := t.TempDir()
			mustCompile(t, testCache(t, other), base)
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
			dir, keyFile := t.TempDir(), filepath.Join(t.TempDir(), "key")
			mustCompile(t, testCacheKey(t, dir, keyFile), base)
			entry := onlyEntry(t, dir)
			tc.plant(t, entry, keyFile)

			var log bytes.Buffer
			r, err := Open(dir, 64, keyFile, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if err := compile(r, base); err != nil {
				t.Fatalf("compile over the planted entry: %v", err)
			}
			if got, want := r.Counts(), (Counts{Refused: 1, Stored: 1}); got != want {
				t.Errorf("compile over the planted entry: %+v, want %+v (refused, compiled once, stored)", got, want)
			}
			if !strings.Contains(log.String(), "entry refused") || !strings.Contains(log.String(), tc.reason) || !strings.Contains(log.String(), "module=answer") {
				t.Errorf("log %q: want a line refusing the entry of answer: %s", log.String(), tc.reason)
			}
			if fi, err := os.Lstat(entry); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the entry after the compile: %v, %v; want a regular file", fi, err)
			}
			again := testCacheKey(t, dir, keyFile)
			mustCompile(t, again, base)
			if got, want := again.Counts(), (Counts{Restored: 1}); got != want {
				t.Errorf("the next compile: %+v, want %+v (the replaced entry read)", got, want)
			}
		})
	}
}
