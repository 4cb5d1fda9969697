package guestio

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestWritersBoundVectoredWrites: empty writes count toward the output
// limit, and no write succeeds once the call's context is done, so a
// vectored write of any length ends.
func TestWritersBoundVectoredWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	overs := 0
	w := &Output{Ctx: ctx, Max: 1000, Over: func() { overs++ }}
	var err error
	n := 0
	for ; n < 1_000_000 && err == nil; n++ {
		_, err = w.Write(nil)
	}
	if !errors.Is(err, ErrOutputLimit) || n != 1001 || overs != 1 {
		t.Errorf("empty writes: error %v after %d writes (over called %d times), want the output limit after 1001", err, n, overs)
	}

	lines := 0
	lw := &Log{Ctx: ctx, Max: 100, Sink: func(string) bool { lines++; return lines < 10 }}
	for range 1000 {
		if _, err := lw.Write([]byte("\n")); err != nil {
			t.Fatalf("stderr write: %v", err)
		}
	}
	if lines != 10 {
		t.Errorf("forwarded %d empty lines, want 10 (until the sink's budget was spent)", lines)
	}
	cancel()
	if _, err := lw.Write([]byte("x")); !errors.Is(err, ErrCallOver) {
		t.Errorf("stderr write after the call ended: %v, want ErrCallOver", err)
	}
	if _, err := (&Output{Ctx: ctx, Max: 10}).Write([]byte("x")); !errors.Is(err, ErrCallOver) {
		t.Errorf("stdout write after the call ended: %v, want ErrCallOver", err)
	}
	if _, err := (Reader{ctx, strings.NewReader("x")}).Read(make([]byte, 1)); !errors.Is(err, ErrCallOver) {
		t.Errorf("read after the call ended: %v, want ErrCallOver", err)
	}
}

// TestOutputGrowsByDoubling: stdout's buffer at least doubles at each
// growth and never grows past the limit, so that at most twice the limit
// is held at once (the old buffer and its copy: the reservation, BufferBytes)
// and at most three times is allocated in all (append's growth by a
// quarter allocates about five).
func TestOutputGrowsByDoubling(t *testing.T) {
	const limit = 10 << 20
	w := &Output{Ctx: context.Background(), Max: limit, Pooled: true}
	chunk := bytes.Repeat([]byte("x"), 27)
	allocated, prev := 0, 0
	for w.counted+len(chunk) <= limit {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if c := cap(w.buf); c != prev {
			if prev > 0 && c < 2*prev && c != limit {
				t.Fatalf("the buffer grew from %d to %d bytes, want at least double or the limit", prev, c)
			}
			allocated += c
			prev = c
		}
	}
	if prev > limit || allocated > 3*limit {
		t.Errorf("the buffer ends at %d bytes after %d allocated in all, want at most %d and %d", prev, allocated, limit, 3*limit)
	}
	PutOutput(w.buf)
}
