package guestio

import (
	"bytes"
	"context"
)

// Log receives the guest's stderr: it keeps the last Max bytes for error
// reports and forwards complete lines to Sink while the call's log budget
// lasts (Sink returns false when it is spent; lines are no longer looked
// for after that, and Sink is set to nil). Like Output it refuses every
// write once Ctx is done, which ends a vectored write whatever its length.
// Set the exported fields before the first write.
type Log struct {
	Ctx  context.Context        // the call's; nil: writes are not refused when it ends
	Max  int                    // bytes of the tail, and of one forwarded line
	Sink func(line string) bool // may be nil

	tail    []byte
	partial []byte
}

func (w *Log) Write(p []byte) (int, error) {
	if w.Ctx != nil && w.Ctx.Err() != nil {
		return 0, ErrCallOver
	}
	n := len(p)
	// Keep the tail.
	if len(p) >= w.Max {
		w.tail = append(w.tail[:0], p[len(p)-w.Max:]...)
	} else {
		if over := len(w.tail) + len(p) - w.Max; over > 0 {
			w.tail = append(w.tail[:0], w.tail[over:]...)
		}
		w.tail = append(w.tail, p...)
	}
	if w.Sink == nil {
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(w.partial)+len(p) > w.Max {
				p = p[:max(0, w.Max-len(w.partial))]
			}
			w.partial = append(w.partial, p...)
			break
		}
		if room := max(0, w.Max-len(w.partial)); i > room {
			w.partial = append(w.partial, p[:room]...) // a line longer than the log is cut
		} else {
			w.partial = append(w.partial, p[:i]...)
		}
		open := w.Sink(string(w.partial))
		w.partial = w.partial[:0]
		p = p[i+1:]
		if !open {
			w.Sink, w.partial = nil, nil
			break
		}
	}
	return n, nil
}

// Flush forwards a last line without a newline.
func (w *Log) Flush() {
	if w.Sink != nil && len(w.partial) > 0 {
		w.Sink(string(w.partial))
		w.partial = nil
	}
}

// Tail returns the last Max bytes written.
func (w *Log) Tail() []byte { return w.tail }
