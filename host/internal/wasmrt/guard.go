package wasmrt

import (
	"context"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// callGuard ends a call whose context is done at the guest's next function
// call. WithCloseOnContextDone alone is not enough: both wazero engines check
// for a closed module only at loop headers, so a guest whose work is a
// loop-free call tree (f calling itself twice, from depth 60) would run past
// its timeout, its cancel and Runtime.Close, holding a CPU for centuries.
//
// It is a function listener on every function the module defines. Cost,
// measured with the compiler: about 50 ns per guest call (two exits to Go),
// so a microbenchmark made only of calls runs ~4x slower, while real tools
// barely notice (a Go tool's describe +7%, the C sha256 tool +2%).
type callGuard struct{}

// withCallGuard returns ctx for CompileModule: the compiled code then calls
// the guard on entry to each of its functions.
func withCallGuard(ctx context.Context) context.Context {
	return experimental.WithFunctionListenerFactory(ctx, callGuard{})
}

func (callGuard) NewFunctionListener(api.FunctionDefinition) experimental.FunctionListener {
	return callGuard{}
}

// Before ends the guest, as the blocking host functions do, once the call's
// context is done (an atomic load otherwise).
func (callGuard) Before(ctx context.Context, _ api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
}

func (callGuard) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (callGuard) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}
