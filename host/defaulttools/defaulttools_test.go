package defaulttools_test

import (
	"bytes"
	"io/fs"
	"testing"

	"github.com/wasmtask/wasmtask/host/defaulttools"
)

func TestFSHoldsTheModules(t *testing.T) {
	names, err := fs.Glob(defaulttools.FS, "*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"add.wasm", "demo.wasm", "sha256.wasm"}
	if len(names) != len(want) {
		t.Fatalf("got %q, want %q", names, want)
	}
	for i, name := range names {
		if name != want[i] {
			t.Errorf("got %q, want %q", name, want[i])
		}
		b, err := fs.ReadFile(defaulttools.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x00asm\x01\x00\x00\x00")) {
			t.Errorf("%s does not start with the Wasm v1 header", name)
		}
	}
}
