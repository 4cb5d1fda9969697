package wasmrt

import (
	"context"
	"strings"
	"testing"
)

// keyConfig is a runtime Config with a cache in dir and the key in file.
func keyConfig(dir, file string) Config {
	return Config{CacheDir: dir, MaxCacheMiB: 1, CacheKeyFile: file, MaxMemoryMiB: 16, MaxSnapshotMiB: 16}
}

// TestCacheKeyRequired: a cache without a key file is a configuration
// error, not a cache without authentication.
func TestCacheKeyRequired(t *testing.T) {
	cfg := keyConfig(t.TempDir(), "")
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "CacheKeyFile") {
		t.Errorf("New without a key file: %v, want an error naming CacheKeyFile", err)
	}
}
