package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func names(ms []Module) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestDigest(t *testing.T) {
	// The SHA-256 of no bytes.
	if got, want := Digest(nil), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("Digest(nil) = %s, want %s", got, want)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.wasm"), "aaa")
	s, err := Scan(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	fsnap, err := ScanFS(fstest.MapFS{"a.wasm": {Data: []byte("aaa")}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range []*Snapshot{s, fsnap} {
		if m, _ := snap.module("a"); m.Digest != Digest([]byte("aaa")) {
			t.Errorf("Module.Digest = %q, want Digest of the content, %q", m.Digest, Digest([]byte("aaa")))
		}
	}
	if got, want := shortDigest(Digest(nil)), "sha256:e3b0c44298fc"; got != want {
		t.Errorf("shortDigest = %s, want %s", got, want)
	}
}

func TestScanRules(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.wasm"), "aaa")
	writeFile(t, filepath.Join(dir, "empty.wasm"), "")
	writeFile(t, filepath.Join(dir, "junk.wasm"), "not wasm at all")
	writeFile(t, filepath.Join(dir, "big.wasm"), strings.Repeat("x", 101))
	writeFile(t, filepath.Join(dir, ".a.wasm.swp"), "swap")
	writeFile(t, filepath.Join(dir, "a.wasm~"), "backup")
	writeFile(t, filepath.Join(dir, "a.wasm.tmp"), "temp")
	writeFile(t, filepath.Join(dir, "bad name.wasm"), "x")
	writeFile(t, filepath.Join(dir, "readme.txt"), "x")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "nested.wasm"), "nested")
	if err := os.Mkdir(filepath.Join(dir, "dir.wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "a.wasm"), filepath.Join(dir, "link.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.wasm"), 0o644); err != nil {
		t.Fatal(err)
	}

	s, err := Scan(context.Background(), Config{Dir: dir, MaxModuleBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := state{
		Modules:  mods("a", "aaa", "empty", "", "junk", "not wasm at all", "link", "aaa"),
		Problems: []string{"invalid module name", "module file too large", "module file is not a regular file"},
	}
	if diff := cmp.Diff(want, stateOf(s)); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
	m, ok := s.module("a")
	if !ok || m.Size != 3 || m.Path != filepath.Join(dir, "a.wasm") {
		t.Errorf("Module(a) = %+v, %v; want size 3 at %s", m, ok, filepath.Join(dir, "a.wasm"))
	}
	b, err := m.readBytes()
	if err != nil || string(b) != "aaa" {
		t.Errorf("readBytes = %q, %v; want %q", b, err, "aaa")
	}
	writeFile(t, m.Path, "bbb")
	if _, err := m.readBytes(); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("readBytes after rewrite: err %v, want ErrDigestMismatch", err)
	}
	writeFile(t, m.Path, "bbbb")
	if _, err := m.readBytes(); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("readBytes after growth: err %v, want ErrDigestMismatch", err)
	}
	os.Remove(m.Path)
	if _, err := m.readBytes(); !errors.Is(err, ErrUnreadable) {
		t.Errorf("readBytes after remove: err %v, want ErrUnreadable", err)
	}
}

func TestScanMaxModules(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"e", "d", "c", "b", "a", "f", "g"} {
		writeFile(t, filepath.Join(dir, n+".wasm"), n)
	}
	s, err := Scan(context.Background(), Config{Dir: dir, MaxModules: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := state{Modules: mods("a", "a", "b", "b", "c", "c"), Problems: []string{"too many module files"}}
	if diff := cmp.Diff(want, stateOf(s)); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
	if p := s.Problems()[0]; !strings.Contains(p.Err.Error(), "4 more") {
		t.Errorf("problem %q, want it to count 4 more files", p.Err)
	}
}

func TestScanConfigErrors(t *testing.T) {
	if _, err := Scan(context.Background(), Config{}); !errors.Is(err, ErrConfig) {
		t.Errorf("Scan with no Dir: err %v, want ErrConfig", err)
	}
	if _, err := Scan(context.Background(), Config{Dir: t.TempDir(), MaxModules: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("Scan with MaxModules -1: err %v, want ErrConfig", err)
	}
}

// TestScanDigestCache checks that a rescan reuses a digest only for a file
// that was already old when it was hashed, and re-reads a file rewritten
// with the same size and modification time shortly after it was hashed.
func TestScanDigestCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.wasm")
	cfg, _ := Config{Dir: dir}.withDefaults()
	sc := newScanner(cfg)
	sc.settle = 0
	scanA := func() string {
		t.Helper()
		s := scanDir(t, sc)
		m, ok := s.module("a")
		if !ok {
			t.Fatalf("a missing: %+v", stateOf(s))
		}
		return m.Digest
	}

	// Recent mtime: rewriting in place with the same size and mtime must
	// still be noticed (the racy case).
	writeFile(t, path, "one")
	mt := time.Now()
	os.Chtimes(path, mt, mt)
	if got := scanA(); got != sum("one") {
		t.Fatalf("digest %s, want sum(one)", got)
	}
	writeFile(t, path, "two")
	os.Chtimes(path, mt, mt)
	if got := scanA(); got != sum("two") {
		t.Errorf("racy rewrite: digest %s, want sum(two) %s", got, sum("two"))
	}

	// Old mtime: the digest is reused without reading the file.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	if got := scanA(); got != sum("two") {
		t.Fatalf("digest %s, want sum(two)", got)
	}
	before := sc.reads
	for range 3 {
		if got := scanA(); got != sum("two") {
			t.Fatalf("digest %s, want sum(two)", got)
		}
	}
	if got := sc.reads - before; got != 0 {
		t.Errorf("rescans of an old, unchanged file read it %d times, want 0", got)
	}
	// Replacing it (new inode) is noticed even with the same size and mtime.
	writeAtomic(t, path, "six")
	os.Chtimes(path, old, old)
	if got := scanA(); got != sum("six") {
		t.Errorf("replaced file: digest %s, want sum(six)", got)
	}
}

func TestScanFS(t *testing.T) {
	fsys := fstest.MapFS{
		"b.wasm":       {Data: []byte("bbb")},
		"a.wasm":       {Data: []byte("aa")},
		".hidden.wasm": {Data: []byte("h")},
		"notes.txt":    {Data: []byte("n")},
		"sub/c.wasm":   {Data: []byte("c")},
		"big.wasm":     {Data: make([]byte, 10)},
	}
	s, err := ScanFS(fsys, Config{MaxModuleBytes: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(s.Modules()), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("modules: got %v, want %v", got, want)
	}
	if ps := s.Problems(); len(ps) != 1 || !errors.Is(ps[0].Err, ErrTooLarge) {
		t.Errorf("problems: got %v, want one ErrTooLarge", ps)
	}
	m, _ := s.module("b")
	if b, err := m.readBytes(); err != nil || string(b) != "bbb" {
		t.Errorf("readBytes: got %q, %v; want %q", b, err, "bbb")
	}
	fsys["b.wasm"] = &fstest.MapFile{Data: []byte("changed")}
	if _, err := m.readBytes(); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("readBytes after change: got %v, want ErrDigestMismatch", err)
	}
}
