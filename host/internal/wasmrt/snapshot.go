package wasmrt

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// Pre-initialisation (abi.ExportInitialize): a module that exports
// "_initialize" as well as "_start" is run once at load up to the end of
// _initialize, in the sandbox with the Limits of its load; its linear
// memory and mutable globals are then written into a new module — data
// segments for the memory's non-zero words (wasmcode.SnapshotDataSize), constant initial
// values for the globals, a memory section that starts at the size
// reached — and that module is the one compiled and instantiated for
// every call, which then runs _start only. Each call still gets a fresh
// instance; it starts from the snapshot instead of from nothing. A Go tool
// built as a reactor (-buildmode=c-shared, which makes _initialize start
// the Go runtime and run the package initialisers) saves most of its
// start-up so.
//
// What _initialize leaves is bounded twice: it runs within the memory limit
// of the load (the most the module's tools get), and the snapshot's data,
// which the compiled module keeps, is held against Config.MaxSnapshotMiB
// from before it is written until the module is freed. The memory is read
// in place and written once, into the snapshot module.
//
// During _initialize the host functions of abi.ImportModule trap (nothing
// may depend on a call that does not exist yet), stdin is empty and
// stdout must stay empty. Clocks and random read normally, but what the
// module keeps of them is the same in every call: ABI.md says so.
//
// What cannot be captured is refused at load: a start section (it ran
// before the snapshot but its effects on tables could not be kept), a data
// count section (passive segments and data.drop: a segment dropped during
// _initialize would be live again), imported or non-numeric mutable
// globals, and _initialize ending by proc_exit or a trap. Tables are
// assumed unchanged by _initialize (table.set/grow there are not seen).

// capture reads the state of mod after _initialize; hold is given the
// bytes the snapshot's data takes before they are allocated, and may refuse
// them. The memory is not copied: Preinit.Rewrite writes it into the
// snapshot while the instance lives.
func capture(pm *wasmcode.Preinit, mod api.Module, hold func(bytes uint64) error) (*wasmcode.Snapshot, error) {
	s := &wasmcode.Snapshot{Globals: make([]uint64, pm.Globals())}
	for _, i := range pm.MutableGlobals() {
		eg := mod.ExportedGlobal(wasmcode.GlobalExport(i))
		if eg == nil {
			return nil, fmt.Errorf("global %d is not exported", i)
		}
		s.Globals[i] = eg.Get()
	}
	mem := mod.ExportedMemory("memory")
	if mem == nil {
		return nil, errors.New("no memory")
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, errors.New("memory unreadable")
	}
	s.Mem, s.DataSize = b, wasmcode.SnapshotDataSize(b)
	if err := hold(s.DataSize); err != nil {
		return nil, err
	}
	return s, nil
}

// preinit runs the pre-initialisation of wasm (which exports
// abi.ExportInitialize) and
// returns the module to compile instead, and its share of
// Config.MaxSnapshotMiB: loaded in a module of its own within lim, run to
// the end of _initialize within lim, captured.
func (r *Runtime) preinit(ctx context.Context, name string, wasm []byte, lim Limits) ([]byte, *snapshotHold, error) {
	exposed, pm, err := wasmcode.ExposeGlobals(wasm)
	if err != nil {
		return nil, nil, fmt.Errorf("load %q: %w: cannot pre-initialise: %v", name, ErrABI, err)
	}
	tmp := &Module{r: r, name: name, done: make(chan struct{})}
	if err := tmp.compile(ctx, exposed, lim); err != nil {
		return nil, nil, err
	}
	defer tmp.closeEngine(context.Background())
	var snap []byte
	var hold *snapshotHold
	var holdErr, snapErr error
	_, err = r.runLoad(ctx, tmp, abi.ExportInitialize, nil, lim, func(c *call, mod api.Module) error {
		if len(c.stdout.Bytes()) > 0 {
			return errors.New("it wrote to stdout during _initialize")
		}
		state, err := capture(pm, mod, func(n uint64) error {
			hold, holdErr = r.holdSnapshot(n)
			return holdErr
		})
		if err != nil {
			return err
		}
		snap, snapErr = pm.Rewrite(wasm, state)
		return snapErr
	})
	switch {
	case holdErr != nil:
		return nil, nil, fmt.Errorf("load %q: cannot pre-initialise: %w", name, holdErr)
	case snapErr != nil:
		hold.release()
		return nil, nil, fmt.Errorf("load %q: %w: cannot pre-initialise: %v", name, ErrABI, snapErr)
	case err != nil:
		hold.release()
		return nil, nil, fmt.Errorf("load %q: pre-initialisation failed: %w", name, err)
	}
	return snap, hold, nil
}
