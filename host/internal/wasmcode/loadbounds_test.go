package wasmcode

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadBoundsAdmitRealModules: the modules shipped with wasmtask, and C
// and Go modules built elsewhere, fit the default bounds (32 MiB of
// compile work, 64 MiB of memory) with room to spare; what each costs is
// logged.
func TestLoadBoundsAdmitRealModules(t *testing.T) {
	files := []string{
		"../../defaulttools/demo.wasm",
		"../../defaulttools/sha256.wasm",
		"../../defaulttools/add.wasm",
		"../../../examples/go/preinit/demo-preinit.wasm",
		"../../../examples/conformance/tools/conformance.wasm",
	}
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, interp := range []bool{false, true} {
			g, err := Guard(wasm, Options{Interpreter: interp, MaxWork: 32 << 20, MaxMemory: 64 << 20, FuelPerCheck: 1 << 17})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			// Half the default: a module twice as large still loads.
			if g.Work > 16<<20 {
				t.Errorf("%s: compile work %s, want at most half the default bound", f, FormatSize(g.Work))
			}
			if !interp {
				t.Logf("%s (%d KiB): compile work %s", filepath.Base(f), len(wasm)>>10, FormatSize(g.Work))
			}
		}
	}
}
