package guestio

import (
	"context"
	"errors"
	"sync"
)

// Output collects stdout up to Max bytes. The write that would pass the
// limit fails and calls Over once, which cancels the call. An empty write
// counts as one byte, and no write succeeds once Ctx is done: WASI's
// fd_write loops over a vector whose length the guest chooses (millions of
// empty entries fit in its memory), calling Write for each, and only an
// error ends that loop. Set the exported fields before the first write.
type Output struct {
	Ctx  context.Context // the call's; nil: writes are not refused when it ends
	Max  int             // bytes
	Over func()          // called once, by the write that passes Max; may be nil
	// Pooled: the buffer is taken from the output pool at the first write
	// (not before: a call that has written nothing yet, such as a running
	// task, holds no buffer), and the caller gives it back (PutOutput).
	Pooled bool

	buf      []byte
	counted  int // len(buf) plus one per empty write
	exceeded bool
}

// ErrCallOver is a write or read refused because the call has ended.
var ErrCallOver = errors.New("the call has ended")

// ErrOutputLimit is the write that passed Output.Max.
var ErrOutputLimit error = &outputLimitError{}

type outputLimitError struct{}

func (*outputLimitError) Error() string { return "output limit reached" }

func (w *Output) Write(p []byte) (int, error) {
	if w.exceeded {
		return 0, ErrOutputLimit
	}
	if w.Ctx != nil && w.Ctx.Err() != nil {
		return 0, ErrCallOver
	}
	if w.counted+max(len(p), 1) > w.Max {
		w.exceeded = true
		if w.Over != nil {
			w.Over()
		}
		return 0, ErrOutputLimit
	}
	w.counted += max(len(p), 1)
	if w.buf == nil && w.Pooled && len(p) > 0 {
		w.buf = getOutput()
	}
	if need := len(w.buf) + len(p); need > cap(w.buf) {
		// Double, never past the limit: at most twice the limit is
		// held at once (BufferBytes) and three times allocated in all.
		// append grows large slices by a quarter, and every step's
		// copy stays in the heap until it is collected: about five
		// times the output.
		grown := make([]byte, len(w.buf), min(max(2*cap(w.buf), need), max(w.Max, need)))
		copy(grown, w.buf)
		if w.Pooled {
			PutOutput(w.buf)
		}
		w.buf = grown
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Bytes returns what was written. With Pooled, the caller gives it back
// with PutOutput once it is done with it.
func (w *Output) Bytes() []byte { return w.buf }

// Exceeded reports whether a write passed Max.
func (w *Output) Exceeded() bool { return w.exceeded }

// BufferBytes bounds the buffers of one call's output and log: stdout grows
// by doubling up to maxOutput, stderr keeps a tail and a partial line of up
// to maxLog each and forwards lines of at most that.
func BufferBytes(maxOutput, maxLog int) uint64 {
	return 2*uint64(max(maxOutput, 0)) + 3*uint64(max(maxLog, 0))
}

// Output buffers are reused from call to call: a call's stdout is read
// into one, decoded, and the buffer goes back. Only buffers of up to
// maxPooledOutput bytes are kept, so that one large result does not stay
// held; the pool itself is emptied by the GC.
const (
	pooledOutput    = 4 << 10
	maxPooledOutput = 64 << 10
)

var outputPool = sync.Pool{New: func() any { b := make([]byte, 0, pooledOutput); return &b }}

func getOutput() []byte { return (*outputPool.Get().(*[]byte))[:0] }

// PutOutput returns b to the pool: no one may hold b, or a slice of it,
// afterwards.
func PutOutput(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledOutput {
		return
	}
	b = b[:0]
	outputPool.Put(&b)
}
