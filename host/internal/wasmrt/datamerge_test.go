package wasmrt

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// TestMergeDataKeepsIndices runs a module that names a passive segment
// with memory.init and data.drop, merged as a load merges it: the
// memory and the instructions behave as in the original.
func TestMergeDataKeepsIndices(t *testing.T) {
	ctx := context.Background()
	orig := wasmFile(t, "datainit")
	merged := wasmcode.MergeDataSection(orig)

	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	run := func(wasm []byte) (mem []byte, errs []bool) {
		mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(ctx)
		for _, fn := range []string{"init", "drop", "init", "init_active"} {
			_, err := mod.ExportedFunction(fn).Call(ctx)
			errs = append(errs, err != nil)
		}
		b, _ := mod.Memory().Read(0, 512)
		return bytes.Clone(b), errs
	}
	wantMem, wantErrs := run(orig)
	gotMem, gotErrs := run(merged)
	if !bytes.Equal(gotMem, wantMem) {
		t.Errorf("memory differs after the merge")
	}
	if string(wantMem[300:307]) != "PASSIVE" || string(wantMem[100:106]) != "abXYcd" {
		t.Fatalf("the test module does not do what it should: %q %q", wantMem[300:307], wantMem[100:106])
	}
	if !slices.Equal(gotErrs, wantErrs) || !wantErrs[2] || wantErrs[0] {
		t.Errorf("traps of init, drop, init, init_active: got %v, want %v (with the second init trapping)", gotErrs, wantErrs)
	}
}

// TestMergeDataGoTool: a Go-built tool's ~38,000 segments become a few.
func TestMergeDataGoTool(t *testing.T) {
	wasm := defaultTool("demo")(t)
	g, err := guardModule(wasm, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.Wasm = wasmcode.MergeDataSection(g.Wasm)
	count := func(w []byte) (n uint64) {
		for p := w[8:]; len(p) > 0; {
			size, k := binary.Uvarint(p[1:])
			if p[0] == 11 { // the data section
				n, _ = binary.Uvarint(p[1+k:])
			}
			p = p[1+k+int(size):]
		}
		return n
	}
	before, after := count(wasm), count(g.Wasm)
	if before < 1000 || after > 64 {
		t.Errorf("data segments: %d before, %d after; want many before and at most 64 after", before, after)
	}
	t.Logf("data segments: %d → %d; module %d → %d bytes", before, after, len(wasm), len(g.Wasm))
}
