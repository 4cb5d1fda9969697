package compilecache

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCacheKeyCreated: a key file that does not exist is created, private,
// with a random key, in a directory created private; the next cache
// reads the same key.
func TestCacheKeyCreated(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config", "wasmtask", "compile-cache.key")
	r := testCacheKey(t, t.TempDir(), file)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("the key file was not created: %v", err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != cacheKeyBytes {
		t.Errorf("key file mode %v, %d bytes; want 0600, %d", fi.Mode().Perm(), fi.Size(), cacheKeyBytes)
	}
	if di, err := os.Stat(filepath.Dir(file)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("key directory: %v, %v; want mode 0700", di.Mode().Perm(), err)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, r.key) || bytes.Equal(b, make([]byte, cacheKeyBytes)) {
		t.Errorf("the cache's key is not the file's random key")
	}
	again := testCacheKey(t, t.TempDir(), file)
	if !bytes.Equal(again.key, r.key) {
		t.Errorf("a second cache made another key instead of reading the file")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".compile-cache-key-*")); len(left) != 0 {
		t.Errorf("temporary key files left: %v", left)
	}
}

// TestCacheKeyRefused: Open refuses a key file it cannot trust, saying why.
func TestCacheKeyRefused(t *testing.T) {
	write := func(t *testing.T, p string, mode os.FileMode, n int) {
		if err := os.WriteFile(p, bytes.Repeat([]byte{7}, n), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// setup returns the key file's path, given the cache directory.
		setup func(t *testing.T, cache string) string
		want  string
	}{
		{"inside the cache", func(t *testing.T, cache string) string { return filepath.Join(cache, "key") }, "inside the compile cache"},
		{"deep inside the cache", func(t *testing.T, cache string) string { return filepath.Join(cache, "a", "b", "key") }, "inside the compile cache"},
		{"through a link to the cache", func(t *testing.T, cache string) string {
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(cache, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "key")
		}, "inside the compile cache"},
		{"a link into the cache", func(t *testing.T, cache string) string {
			write(t, filepath.Join(cache, "key"), 0o600, 32)
			link := filepath.Join(t.TempDir(), "key")
			if err := os.Symlink(filepath.Join(cache, "key"), link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "inside the compile cache"},
		{"readable by others", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			write(t, p, 0o644, 32)
			return p
		}, "group or others may access it"},
		{"readable by the group", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			write(t, p, 0o640, 32)
			return p
		}, "group or others may access it"},
		{"writable by others", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			write(t, p, 0o602, 32)
			return p
		}, "group or others may access it"},
		{"owned by another user", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			write(t, p, 0o600, 32)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Skipf("chown: %v", err)
			}
			return p
		}, "owned by uid 65534"},
		{"too short", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			write(t, p, 0o600, 31)
			return p
		}, "has 31 bytes"},
		{"too long", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			write(t, p, 0o600, maxCacheKeyBytes+1)
			return p
		}, "has 4097 bytes"},
		{"a directory", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return p
		}, "a directory"},
		{"a named pipe", func(t *testing.T, _ string) string {
			p := filepath.Join(t.TempDir(), "key")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, "a named pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			_, err := Open(cache, 1, tc.setup(t, cache), slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), "compile cache key") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want a refusal of the key: %s", err, tc.want)
			}
		})
	}
}
