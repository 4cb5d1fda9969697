package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestStoreKeysChecked: a shared store without a key file is refused with
// the command that makes one, and a key file group or others may read is
// refused with the command that fixes it, before any store is opened.
func TestStoreKeysChecked(t *testing.T) {
	open := filepath.Join(t.TempDir(), "store.keys")
	if err := os.WriteFile(open, []byte(NewStoreKeys()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		store StoreConfig
		want  string
	}{
		{"shared without keys", StoreConfig{URL: "nats://127.0.0.1:1"}, "wasmtask store-keys > store.keys"},
		{"keys others may read", StoreConfig{Dir: t.TempDir(), KeysFile: open}, "chmod 600 " + open},
	} {
		_, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{}, Store: tc.store})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
