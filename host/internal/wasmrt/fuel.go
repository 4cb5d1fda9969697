package wasmrt

import (
	"context"
	"runtime"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// fuelPerCheck is the fuel a check hands out: about that many instructions
// run between two checks (BenchmarkSpin measures the choice; the rewrite is
// described in wasmcode's fuel.go). It is a variable only so that
// BenchmarkSpin can compare values; it is read when a module is loaded
// (wasmcode.Options.FuelPerCheck) and when the check runs.
var fuelPerCheck int32 = 1 << 17

// hostFuel is the fuel check: it ends the guest when its call is over and
// hands out more fuel otherwise.
func hostFuel(ctx context.Context, _ api.Module, stack []uint64) {
	done := ctx.Err() != nil
	s := stateOf(ctx)
	if s != nil && s.onFuel != nil {
		s.onFuel(done)
	}
	if done {
		exitOnDone(ctx)
	}
	if s != nil {
		s.yieldIfDue()
	}
	stack[0] = api.EncodeI32(fuelPerCheck)
}

// yieldEvery is how long a guest runs between two yields to the scheduler
// (RATIONALE.md, "Why does the fuel check yield to the scheduler?"): a
// tenth of Go's own 10 ms time slice, so that a call queued behind spinning
// guests waits a round of 1 ms turns, while a guest alone yields at most
// a thousand times a second.
const yieldEvery = time.Millisecond

// yieldIfDue yields the processor if the guest has run yieldEvery since it
// last did (or since its call began).
func (s *callState) yieldIfDue() {
	now := time.Now()
	if s.yielded.IsZero() {
		s.yielded = now
		return
	}
	if now.Sub(s.yielded) >= yieldEvery {
		runtime.Gosched()
		s.yielded = time.Now()
	}
}

// instantiateFuel defines wasmcode.FuelModule in r.
func instantiateFuel(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(wasmcode.FuelModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostFuel), nil, []api.ValueType{api.ValueTypeI32}).
		Export(wasmcode.FuelFunc).
		Instantiate(ctx)
	return err
}

// fuelHookKey is the context key of a func(stopping bool) the fuel check
// calls each time it runs, stopping when it ends the guest (tests count
// checks with it).
type fuelHookKey struct{}
