package wasmrt

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/linearmem"
)

const (
	maxWasm32MiB = 4096 // 65536 pages: all a wasm32 memory can address
)

// Limits bound one call. Every field but Env, Mounts and Result is
// required (a zero field is an error): the numbers are the operator's,
// resolved by the host from its policy, never by the module, and wasmrt
// keeps no defaults of its own (Result's are the ABI's).
type Limits struct {
	MemoryMiB      int               // linear memory; capped by Config.MaxMemoryMiB
	Timeout        time.Duration     // wall clock
	MaxOutputBytes int               // stdout; past it the call fails with KindOutputTooLarge
	MaxLogBytes    int               // stderr and log calls forwarded to Events.Log; tail of stderr kept
	Env            map[string]string // environment variables the guest sees; none by default
	Mounts         []Mount           // directories the guest sees; none by default
	Result         abi.ResultLimits  // counts of the result (blocks, nesting, values); a zero field is abi's default

	elapsed time.Duration // of Timeout, spent before the guest starts (checking arguments)
}

// Mount grants the guest a host directory at GuestPath. The directory is
// opened with os.Root: symbolic links cannot lead out of it. Without Write the
// guest can only read.
type Mount struct {
	HostDir   string
	GuestPath string
	Write     bool
}

// ErrLimits is wrapped by the error of a Limits value with a missing field.
var ErrLimits = errors.New("incomplete limits")

func (l Limits) validate() error {
	switch {
	case l.MemoryMiB <= 0:
		return fmt.Errorf("%w: MemoryMiB %d", ErrLimits, l.MemoryMiB)
	case l.Timeout <= 0:
		return fmt.Errorf("%w: Timeout %v", ErrLimits, l.Timeout)
	case l.MaxOutputBytes <= 0:
		return fmt.Errorf("%w: MaxOutputBytes %d", ErrLimits, l.MaxOutputBytes)
	case l.MaxLogBytes <= 0:
		return fmt.Errorf("%w: MaxLogBytes %d", ErrLimits, l.MaxLogBytes)
	}
	return nil
}

// limitedAllocator backs one instance's linear memory with the call's
// memory pool (wasmcode's stack.go): linear memory, the stack's high-water mark and
// function references share pool bytes. memory.grow past what the pool has
// left returns -1 to the guest. wazero's RuntimeConfig.WithMemoryLimitPages
// is runtime-wide; this makes the limit per call.
type limitedAllocator struct {
	pool    uint64
	cache   *linearmem.Cache // the runtime's
	refused atomic.Bool      // set when a growth was refused
	// over is called when the initial memory is already over the pool:
	// wazero cannot fail that allocation, so the call is ended instead.
	over func()

	// Set by attach once the instance exists; only the goroutine running
	// the guest uses them (memory.grow runs on it).
	left, low api.MutableGlobal
	charged   uint64 // bytes linear memory took from the pool
	mems      []*limitedMemory
}

// Allocate ignores wazero's capacity and maximum hints: the pool bounds
// the memory.
func (a *limitedAllocator) Allocate(_, _ uint64) experimental.LinearMemory {
	m := &limitedMemory{a: a, backing: linearmem.New(a.pool, a.cache)}
	a.mems = append(a.mems, m)
	return m
}

// release gives back the memory of every instance the allocator backed.
// The caller runs it once the guest has stopped: the instance may be
// closed earlier, from another goroutine, while the guest still runs.
func (a *limitedAllocator) release() {
	for _, m := range a.mems {
		m.backing.Release()
	}
	a.mems = nil
}

// attach hands the allocator the instance's pool globals and sets both to
// what the pool has left beside the initial linear memory.
func (a *limitedAllocator) attach(left, low api.MutableGlobal) {
	v := api.EncodeI64(int64(a.pool) - int64(a.charged))
	left.Set(v)
	low.Set(v)
	a.left, a.low = left, low
}

// available is what linear memory may take in all: what it has, plus what
// the pool has left under the stack's high-water mark.
func (a *limitedAllocator) available() uint64 {
	if a.low == nil {
		return a.pool
	}
	return a.charged + uint64(max(int64(a.low.Get()), 0))
}

// take charges n more bytes of linear memory to the pool.
func (a *limitedAllocator) take(n uint64) {
	a.charged += n
	if a.low != nil {
		a.left.Set(uint64(int64(a.left.Get()) - int64(n)))
		a.low.Set(uint64(int64(a.low.Get()) - int64(n)))
	}
}

type limitedMemory struct {
	a       *limitedAllocator
	backing linearmem.Backing
	grown   bool // the initial allocation happened
}

// Reallocate grows linear memory to size bytes (wazero never shrinks it).
func (m *limitedMemory) Reallocate(size uint64) []byte {
	defer func() { m.grown = true }()
	a := m.a
	avail := a.available()
	if size > avail {
		a.refused.Store(true)
		if m.grown {
			return nil
		}
		if a.over != nil {
			a.over()
		}
		avail = size
	}
	buf, held, ok := m.backing.Grow(size, avail)
	if !ok {
		a.refused.Store(true)
		if m.grown {
			return nil
		}
		panic(fmt.Errorf("cannot allocate %d bytes of linear memory", size))
	}
	a.take(held - a.charged)
	return buf
}

// Free does nothing: wazero calls it when the instance is closed, which
// may happen on another goroutine while the guest still runs (a cancel).
// The allocator's release gives the memory back once the guest has
// stopped.
func (m *limitedMemory) Free() {}
