package wasmcode

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

// FuzzGuard feeds arbitrary bytes to Guard: it must not panic, and it must
// not turn a module wazero refuses into one it accepts (the appended
// globals and function must stay out of the guest's reach). wazero, the
// engine the rewrite is for, is the oracle; only the tests import it.
func FuzzGuard(f *testing.F) {
	for _, name := range []string{"ok", "callbomb", "tablegrow", "hostile", "spin"} {
		f.Add(testModule(f, name))
	}
	for _, body := range [][]byte{{0x23, 0x00, 0x1a}, {0x10, 0x01}, {0xd2, 0x00, 0x1a}, {0x0f}, {0x41, 0x01, 0x40, 0x00, 0x1a}} {
		f.Add(moduleWithBody(1, body...))
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Cleanup(func() { _ = rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		g, err := guard(wasm, false, 0)
		if err != nil {
			return
		}
		guarded, err := rt.CompileModule(ctx, g.Wasm)
		if err != nil {
			return
		}
		_ = guarded.Close(ctx)
		orig, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatalf("wazero refuses the module (%v) but accepts it instrumented", err)
		}
		_ = orig.Close(ctx)
	})
}
