package wasmrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/experimental"
)

const (
	pageSize     = 65536
	maxWasm32MiB = 4096 // 65536 pages: all a wasm32 memory can address
)

// Limits bound one call. Every field but Env and Mounts is required (a zero
// field is an error): the numbers are the operator's, resolved by the host
// from its policy, never by the module, and wasmrt keeps no defaults of its
// own.
type Limits struct {
	MemoryMiB      int               // linear memory; capped by Config.MaxMemoryMiB
	Timeout        time.Duration     // wall clock
	MaxOutputBytes int               // stdout; past it the call fails with KindOutputTooLarge
	MaxLogBytes    int               // stderr and log calls forwarded to Events.Log; tail of stderr kept
	Env            map[string]string // environment variables the guest sees; none by default
	Mounts         []Mount           // directories the guest sees; none by default

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
var ErrLimits = errors.New("wasmrt: incomplete limits")

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

// limitedAllocator backs one instance's linear memory and refuses growth
// past limit bytes: memory.grow then returns -1 to the guest. wazero's
// RuntimeConfig.WithMemoryLimitPages is runtime-wide; this makes the limit
// per call.
type limitedAllocator struct {
	limit   uint64
	refused atomic.Bool // set when a growth was refused
	// over is called when the initial memory is already over the limit:
	// wazero cannot fail that allocation, so the call is ended instead.
	over func()
}

// Allocate ignores wazero's capacity hint: it can be the module's whole
// maximum (up to the call's limit), and reserving it per call made every
// call allocate (and the GC scan) that much. Memory grows geometrically
// from the initial size instead.
func (a *limitedAllocator) Allocate(_, _ uint64) experimental.LinearMemory {
	return &limitedMemory{a: a}
}

type limitedMemory struct {
	a     *limitedAllocator
	buf   []byte
	grown bool // the initial allocation happened
}

// Reallocate grows the buffer to size bytes, keeping its contents. Bytes
// past len are zero because the buffer never shrinks.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	defer func() { m.grown = true }()
	if size > m.a.limit {
		m.a.refused.Store(true)
		if m.grown {
			return nil
		}
		if m.a.over != nil {
			m.a.over()
		}
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	// Grow geometrically to keep memory.grow loops linear, but never past
	// the limit.
	newCap := max(size, uint64(cap(m.buf))*2)
	newCap = max(min(newCap, m.a.limit), size)
	nb := make([]byte, size, newCap)
	copy(nb, m.buf)
	m.buf = nb
	return nb
}

func (m *limitedMemory) Free() { m.buf = nil }

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
	ctx context.Context
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
