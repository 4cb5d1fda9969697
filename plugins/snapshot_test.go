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

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	scan := func(files map[string]string) *Snapshot {
		t.Helper()
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			os.Remove(filepath.Join(dir, e.Name()))
		}
		for n, c := range files {
			writeFile(t, filepath.Join(dir, n+".wasm"), c)
		}
		s, err := Scan(context.Background(), Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := scan(map[string]string{"keep": "k", "edit": "v1", "gone": "g", "mv": "m"})
	new := scan(map[string]string{"keep": "k", "edit": "v2", "add": "a", "moved": "m"})

	d := Compare(old, new)
	got := map[string][]string{"added": names(d.Added), "removed": names(d.Removed), "changed": names(d.Changed), "unchanged": names(d.Unchanged)}
	want := map[string][]string{"added": {"add", "moved"}, "removed": {"gone", "mv"}, "changed": {"edit"}, "unchanged": {"keep"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
	if d.Empty() {
		t.Error("Empty() = true, want false")
	}
	// A rename keeps its digest, so the host can reuse the compiled module.
	if d.Added[1].Digest != d.Removed[1].Digest {
		t.Errorf("renamed module digest %s, want %s", d.Added[1].Digest, d.Removed[1].Digest)
	}
	if d.Changed[0].Digest != sum("v2") {
		t.Errorf("changed entry digest is %s, want the new one %s", d.Changed[0].Digest, sum("v2"))
	}
	if !Compare(new, new).Empty() {
		t.Error("Compare(s, s) is not empty")
	}
	if got := names(Compare(nil, new).Added); len(got) != 4 {
		t.Errorf("Compare(nil, s).Added = %v, want all 4", got)
	}
	if got := names(Compare(new, nil).Removed); len(got) != 4 {
		t.Errorf("Compare(s, nil).Removed = %v, want all 4", got)
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
	m, ok := s.Module("a")
	if !ok || m.Size != 3 || m.Path != filepath.Join(dir, "a.wasm") {
		t.Errorf("Module(a) = %+v, %v; want size 3 at %s", m, ok, filepath.Join(dir, "a.wasm"))
	}
	b, err := m.ReadBytes()
	if err != nil || string(b) != "aaa" {
		t.Errorf("ReadBytes = %q, %v; want %q", b, err, "aaa")
	}
	writeFile(t, m.Path, "bbb")
	if _, err := m.ReadBytes(); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("ReadBytes after rewrite: err %v, want ErrDigestMismatch", err)
	}
	writeFile(t, m.Path, "bbbb")
	if _, err := m.ReadBytes(); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("ReadBytes after growth: err %v, want ErrDigestMismatch", err)
	}
	os.Remove(m.Path)
	if _, err := m.ReadBytes(); !errors.Is(err, ErrUnreadable) {
		t.Errorf("ReadBytes after remove: err %v, want ErrUnreadable", err)
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

func TestScanDirProblems(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, file, "x")
	for _, tt := range []struct {
		dir  string
		want string
	}{
		{filepath.Join(dir, "missing"), "module directory does not exist"},
		{file, "module directory is not a directory"},
	} {
		s, err := Scan(context.Background(), Config{Dir: tt.dir})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(state{Modules: map[string]string{}, Problems: []string{tt.want}}, stateOf(s)); diff != "" {
			t.Errorf("Scan(%s) (-want +got):\n%s", tt.dir, diff)
		}
	}
	if _, err := Scan(context.Background(), Config{}); !errors.Is(err, ErrConfig) {
		t.Errorf("Scan with no Dir: err %v, want ErrConfig", err)
	}
	if _, err := Scan(context.Background(), Config{Dir: dir, MaxModules: -1}); !errors.Is(err, ErrConfig) {
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
		r, err := sc.scan(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := r.snap.Module("a")
		if !ok {
			t.Fatalf("a missing: %+v", stateOf(r.snap))
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
	m, _ := s.Module("b")
	if b, err := m.ReadBytes(); err != nil || string(b) != "bbb" {
		t.Errorf("ReadBytes: got %q, %v; want %q", b, err, "bbb")
	}
	fsys["b.wasm"] = &fstest.MapFile{Data: []byte("changed")}
	if _, err := m.ReadBytes(); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("ReadBytes after change: got %v, want ErrDigestMismatch", err)
	}
}
