package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/wasmtask/wasmtask/host"
)

// cacheLog collects a server's operator log as JSON records.
type cacheLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *cacheLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// records returns the log records whose message starts with msg.
func (l *cacheLog) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range bytes.Lines(l.buf.Bytes()) {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m, _ := r["msg"].(string); strings.HasPrefix(m, msg) {
			out = append(out, r)
		}
	}
	return out
}

// cacheRun is one server's life over a compile cache: it serves modules
// until they have loaded, checks that each answers, and reports which
// modules it compiled (their entries, by module) and which entries it
// refused, with why.
type cacheRun struct {
	stored  map[string]string // module → entry path
	refused map[string]string // module → log message
}

func runOnCache(t *testing.T, interpreter bool, dir, key string, modules ...string) cacheRun {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, m := range modules {
		fsys[m+".wasm"] = &fstest.MapFile{Data: wasm(t, m)}
	}
	var log cacheLog
	s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Interpreter: interpreter,
		CacheDir: dir, CacheKeyFile: key, Policy: policy(nil),
		Logger: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	defer s.Close()
	if p := s.Problems(); len(p) > 0 {
		t.Fatalf("modules not served: %v", p)
	}
	want := map[string]string{"normal": "ok", "state": "1 1"}
	tools := map[string]string{"normal": "echo", "state": "count"}
	for _, m := range modules {
		if got := text(t, s, tools[m], "{}", nil); got != want[m] {
			t.Errorf("%s: got %q, want %q", tools[m], got, want[m])
		}
	}
	run := cacheRun{stored: map[string]string{}, refused: map[string]string{}}
	for _, r := range log.records(t, "compile cache: entry stored") {
		run.stored[r["module"].(string)] = r["entry"].(string)
	}
	for _, r := range log.records(t, "compile cache: entry refused") {
		run.refused[r["module"].(string)] = r["msg"].(string)
	}
	return run
}

// TestCompileCacheHostileEntries: an attacker who can write the compile
// cache's directory (a shared volume, a mistaken permission) but cannot
// read the key file plants, replaces, copies or alters a module's entry.
// The next server refuses the entry with a log line naming the module and
// why, compiles the module again (once: counted by the entries it stores),
// serves it, and replaces the entry with one the server after it reads
// without compiling. Nothing it finds blocks a load or ends the process.
func TestCompileCacheHostileEntries(t *testing.T) {
	wasm(t, "normal")
	wasm(t, "state")
	readEntry := func(t *testing.T, p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	writeEntry := func(t *testing.T, p string, b []byte) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// plant changes the entry of normal at p; other is the entry of
		// state in the same cache, key the server's key file.
		plant func(t *testing.T, p, other, key string)
		why   string
	}{
		{"named pipe", func(t *testing.T, p, _, _ string) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "a named pipe"},
		{"symbolic link", func(t *testing.T, p, other, _ string) {
			os.Remove(p)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link"},
		{"directory in wazero's own layout", func(t *testing.T, p, other, _ string) {
			// What the previous layout held, as an attacker who knows
			// wazero's format would plant it.
			os.Remove(p)
			if err := os.MkdirAll(filepath.Join(p, "wazero-dev-amd64-linux"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "wazero-dev-amd64-linux", "00"), []byte("WAZEVO\x03dev\xff\xff\xff\xff"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "a directory"},
		{"oversized", func(t *testing.T, p, _, _ string) {
			if err := os.Truncate(p, 1<<40); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
		}, "more than the"},
		{"owned by another user", func(t *testing.T, p, _, _ string) {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Skipf("chown: %v", err)
			}
		}, "owned by uid 65534"},
		{"truncated", func(t *testing.T, p, _, _ string) {
			writeEntry(t, p, readEntry(t, p)[:len(readEntry(t, p))/2])
		}, "MAC does not match"},
		{"forged code", func(t *testing.T, p, _, _ string) {
			b := readEntry(t, p)
			for i := len(b) / 3; i < len(b)/3+64; i++ {
				b[i] = 0xcc // int3: the SIGTRAP of a forged entry that runs
			}
			writeEntry(t, p, b)
		}, "MAC does not match"},
		{"copied from another module", func(t *testing.T, p, other, _ string) {
			writeEntry(t, p, readEntry(t, other))
		}, "MAC does not match"},
		{"written with another key", func(t *testing.T, p, _, _ string) {
			elsewhere := t.TempDir()
			run := runOnCache(t, false, elsewhere, filepath.Join(t.TempDir(), "key"), "normal")
			writeEntry(t, p, readEntry(t, run.stored["normal"]))
		}, "MAC does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, key := t.TempDir(), filepath.Join(t.TempDir(), "key")
			first := runOnCache(t, false, dir, key, "normal", "state")
			if len(first.stored) != 2 || len(first.refused) != 0 {
				t.Fatalf("first server: stored %v, refused %v; want both modules compiled and stored", first.stored, first.refused)
			}
			tc.plant(t, first.stored["normal"], first.stored["state"], key)

			second := runOnCache(t, false, dir, key, "normal", "state")
			if why, ok := second.refused["normal"]; !ok || !strings.Contains(why, tc.why) {
				t.Errorf("second server refused %v; want normal's entry refused: %s", second.refused, tc.why)
			}
			if _, ok := second.stored["normal"]; !ok || len(second.stored) != 1 {
				t.Errorf("second server compiled %v; want normal alone compiled again", second.stored)
			}
			if _, ok := second.refused["state"]; ok {
				t.Errorf("state's entry refused: %s", second.refused["state"])
			}

			third := runOnCache(t, false, dir, key, "normal", "state")
			if len(third.stored)+len(third.refused) != 0 {
				t.Errorf("third server: compiled %v, refused %v; want both read from the cache", third.stored, third.refused)
			}
		})
	}
}

// TestCompileCacheInterpreter: the interpreter keeps no compiled code, so
// it neither reads nor writes the cache: a named pipe planted at an entry
// does not hold up its loads, and is left as it was.
func TestCompileCacheInterpreter(t *testing.T) {
	wasm(t, "normal")
	dir, key := t.TempDir(), filepath.Join(t.TempDir(), "key")
	first := runOnCache(t, false, dir, key, "normal")
	p := first.stored["normal"]
	if p == "" {
		t.Fatalf("the compiler stored no entry: %v", first)
	}
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	run := runOnCache(t, true, dir, key, "normal")
	if len(run.stored)+len(run.refused) != 0 {
		t.Errorf("the interpreter used the cache: %+v", run)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the planted pipe: %v, %v; want it left alone", fi, err)
	}
	if ents, _ := os.ReadDir(dir); !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return filepath.Join(dir, e.Name()) == p }) || len(ents) != 1 {
		t.Errorf("cache directory %v: want the one planted entry", ents)
	}
}

// TestCompileCacheKeyRefused: the server does not start on a key others
// may read, or one inside the cache, and says which.
func TestCompileCacheKeyRefused(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(open, bytes.Repeat([]byte{1}, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o644)
	for _, key := range []string{open, filepath.Join(dir, "key")} {
		_, err := host.New(context.Background(), host.Config{CacheDir: dir, CacheKeyFile: key})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("host.New with key %s: %v, want a refusal naming it", key, err)
		}
	}
}
