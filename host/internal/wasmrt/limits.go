package wasmrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// limitedWriter collects stdout up to max bytes. The write that would pass
// the limit fails and calls over() once, which cancels the call. An empty
// write counts as one byte, and no write succeeds once ctx is done: WASI's
// fd_write loops over a vector whose length the guest chooses (millions of
// empty entries fit in its memory), calling Write for each, and only an
// error ends that loop.
type limitedWriter struct {
	ctx      context.Context
	buf      []byte
	max      int
	counted  int // len(buf) plus one per empty write
	exceeded bool
	over     func()
	// pooled: buf is taken from the output pool at the first write (not
	// before: a call that has written nothing yet, such as a running
	// task, holds no buffer), and the caller gives it back (putOutput).
	pooled bool
}

// errCallOver is a write refused because the call has ended.
var errCallOver = errors.New("the call has ended")

var errOutputLimit = &outputLimitError{}

type outputLimitError struct{}

func (*outputLimitError) Error() string { return "output limit reached" }

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.exceeded {
		return 0, errOutputLimit
	}
	if w.ctx != nil && w.ctx.Err() != nil {
		return 0, errCallOver
	}
	if w.counted+max(len(p), 1) > w.max {
		w.exceeded = true
		if w.over != nil {
			w.over()
		}
		return 0, errOutputLimit
	}
	w.counted += max(len(p), 1)
	if w.buf == nil && w.pooled && len(p) > 0 {
		w.buf = getOutput()
	}
	if need := len(w.buf) + len(p); need > cap(w.buf) {
		// Double, never past the limit: at most twice the limit is
		// held at once (ioBytes) and three times allocated in all.
		// append grows large slices by a quarter, and every step's
		// copy stays in the heap until it is collected: about five
		// times the output.
		grown := make([]byte, len(w.buf), min(max(2*cap(w.buf), need), max(w.max, need)))
		copy(grown, w.buf)
		if w.pooled {
			putOutput(w.buf)
		}
		w.buf = grown
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// logWriter receives the guest's stderr: it keeps the last max bytes for
// error reports and forwards complete lines to sink while the call's log
// budget lasts (sink returns false when it is spent; lines are no longer
// looked for after that). Like limitedWriter it refuses every write once
// ctx is done, which ends a vectored write whatever its length.
type logWriter struct {
	ctx     context.Context
	tail    []byte
	max     int
	partial []byte
	sink    func(line string) bool // may be nil
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.ctx != nil && w.ctx.Err() != nil {
		return 0, errCallOver
	}
	n := len(p)
	// Keep the tail.
	if len(p) >= w.max {
		w.tail = append(w.tail[:0], p[len(p)-w.max:]...)
	} else {
		if over := len(w.tail) + len(p) - w.max; over > 0 {
			w.tail = append(w.tail[:0], w.tail[over:]...)
		}
		w.tail = append(w.tail, p...)
	}
	if w.sink == nil {
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(w.partial)+len(p) > w.max {
				p = p[:max(0, w.max-len(w.partial))]
			}
			w.partial = append(w.partial, p...)
			break
		}
		if room := max(0, w.max-len(w.partial)); i > room {
			w.partial = append(w.partial, p[:room]...) // a line longer than the log is cut
		} else {
			w.partial = append(w.partial, p[:i]...)
		}
		open := w.sink(string(w.partial))
		w.partial = w.partial[:0]
		p = p[i+1:]
		if !open {
			w.sink, w.partial = nil, nil
			break
		}
	}
	return n, nil
}

// flush forwards a last line without a newline.
func (w *logWriter) flush() {
	if w.sink != nil && len(w.partial) > 0 {
		w.sink(string(w.partial))
		w.partial = nil
	}
}

// ctxReader is a reader that fails once ctx is done (stdin, and the
// guest's random source: random_get fills a buffer of the guest's chosen
// size, so it is filled in chunks with the context checked between them).
type ctxReader struct {
	ctx interface{ Err() error } // the call's context, or what reads it
	r   io.Reader
}

const readChunk = 64 << 10

func (c ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, errCallOver
	}
	if len(p) > readChunk {
		p = p[:readChunk]
	}
	return c.r.Read(p)
}
