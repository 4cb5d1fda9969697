package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// TestCompileCacheKeyDefault: without CacheKeyFile, the compile cache's
// key is made private in the user's configuration directory, never in
// the cache; the interpreter, which keeps no code on disk, makes none.
func TestCompileCacheKeyDefault(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	key := filepath.Join(config, "wasmtask", "compile-cache.key")
	tools := fstest.MapFS{"add.wasm": {Data: addModule(t)}}

	s, err := New(context.Background(), Config{ToolsFS: tools, CacheDir: t.TempDir(), Interpreter: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(key); err == nil {
		t.Errorf("the interpreter made a compile cache key at %s", key)
	}

	s, err = New(context.Background(), Config{ToolsFS: tools, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, err := os.Stat(key)
	if err != nil {
		t.Fatalf("no key at the default place: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}
}
