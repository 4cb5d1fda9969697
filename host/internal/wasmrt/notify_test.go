package wasmrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/abi"
)

// TestNotifierBurstThenRate: a flood of log messages passes the burst at
// once, then notifyRate a second; the rest is counted in one warning.
func TestNotifierBurstThenRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &events{}
		n := newNotifier(ev)
		for i := range 1000 {
			n.Log(abi.LogInfo, fmt.Sprint(i))
		}
		time.Sleep(time.Second) // notifyRate tokens come back
		for i := range 1000 {
			n.Log(abi.LogInfo, fmt.Sprint(i))
		}
		n.finish()
		sent := len(ev.logs) - 1
		if want := notifyBurst + notifyRate; sent != want {
			t.Errorf("sent %d log messages, want %d", sent, want)
		}
		want := fmt.Sprintf("2:wasmtask: %d notifications from this call were dropped (more than %d a second)", 2000-sent, notifyRate)
		if last := ev.logs[len(ev.logs)-1]; last != want {
			t.Errorf("last message %q, want %q", last, want)
		}
	})
}

// TestNotifierProgress: progress only moves forward, and a report that
// finds no token waits, replaced by newer ones, until a token comes back
// or the call ends.
func TestNotifierProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &events{}
		n := newNotifier(ev)
		n.Progress(5, 10, "five")
		n.Progress(5, 10, "again") // not forward: dropped
		n.Progress(4, 10, "back")  // dropped
		for i := 6; i < 6+notifyBurst+10; i++ {
			n.Progress(float64(i), 100, "")
		}
		// The burst is spent: the last report waits.
		if got := len(ev.progress); got != notifyBurst {
			t.Fatalf("sent %d progress reports before the rate applies, want %d", got, notifyBurst)
		}
		time.Sleep(time.Second)
		n.Status("s") // a token: the waiting report goes first
		n.finish()
		want := fmt.Sprintf("%d/100 ", 6+notifyBurst+9)
		if got := ev.progress[notifyBurst]; got != want {
			t.Errorf("coalesced report %q, want the latest %q", got, want)
		}
		if len(ev.status) != 1 {
			t.Errorf("status %v, want one", ev.status)
		}
		// 2 regressions + 10 reports replaced while waiting.
		if want := "2:wasmtask: 12 notifications from this call were dropped (more than 20 a second)"; len(ev.logs) != 1 || ev.logs[0] != want {
			t.Errorf("logs %q, want [%q]", ev.logs, want)
		}
		last := -1.0
		for _, p := range ev.progress {
			var v, total float64
			fmt.Sscanf(p, "%g/%g", &v, &total)
			if v <= last {
				t.Errorf("progress went from %g to %g: %v", last, v, ev.progress)
			}
			last = v
		}
	})
}

// TestNotifierQuiet: a well-behaved call sees no change and no warning.
func TestNotifierQuiet(t *testing.T) {
	ev := &events{}
	n := newNotifier(ev)
	n.Progress(1, 2, "half")
	n.Status("working")
	n.Log(abi.LogInfo, "hi")
	n.finish()
	got := map[string][]string{"progress": ev.progress, "status": ev.status, "logs": ev.logs}
	want := map[string][]string{"progress": {"1/2 half"}, "status": {"working"}, "logs": {"1:hi"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// TestWritersBoundVectoredWrites: empty writes count toward the output
// limit, and no write succeeds once the call's context is done, so a
// vectored write of any length ends.
func TestWritersBoundVectoredWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	overs := 0
	w := &limitedWriter{ctx: ctx, max: 1000, over: func() { overs++ }}
	var err error
	n := 0
	for ; n < 1_000_000 && err == nil; n++ {
		_, err = w.Write(nil)
	}
	if !errors.Is(err, errOutputLimit) || n != 1001 || overs != 1 {
		t.Errorf("empty writes: error %v after %d writes (over called %d times), want the output limit after 1001", err, n, overs)
	}

	lines := 0
	lw := &logWriter{ctx: ctx, max: 100, sink: func(string) bool { lines++; return lines < 10 }}
	for range 1000 {
		if _, err := lw.Write([]byte("\n")); err != nil {
			t.Fatalf("stderr write: %v", err)
		}
	}
	if lines != 10 {
		t.Errorf("forwarded %d empty lines, want 10 (until the sink's budget was spent)", lines)
	}
	cancel()
	if _, err := lw.Write([]byte("x")); !errors.Is(err, errCallOver) {
		t.Errorf("stderr write after the call ended: %v, want errCallOver", err)
	}
	if _, err := (&limitedWriter{ctx: ctx, max: 10}).Write([]byte("x")); !errors.Is(err, errCallOver) {
		t.Errorf("stdout write after the call ended: %v, want errCallOver", err)
	}
	if _, err := (ctxReader{ctx, strings.NewReader("x")}).Read(make([]byte, 1)); !errors.Is(err, errCallOver) {
		t.Errorf("read after the call ended: %v, want errCallOver", err)
	}
}

// TestOutputGrowsByDoubling: stdout's buffer at least doubles at each
// growth and never grows past the limit, so that at most twice the limit
// is held at once (the old buffer and its copy: the reservation, ioBytes)
// and at most three times is allocated in all (append's growth by a
// quarter allocates about five).
func TestOutputGrowsByDoubling(t *testing.T) {
	const limit = 10 << 20
	w := &limitedWriter{ctx: context.Background(), max: limit, pooled: true}
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
	putOutput(w.buf)
}

// TestElicitBudget: a call asks at most elicitBurst questions at once,
// then one per elicitEvery, and never more than maxElicits.
func TestElicitBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCallState(&events{}, 100)
		asked := 0
		for range 100 {
			if s.mayElicit() {
				asked++
			}
		}
		if asked != elicitBurst {
			t.Fatalf("asked %d at once, want %d", asked, elicitBurst)
		}
		for range 1000 {
			time.Sleep(elicitEvery)
			if s.mayElicit() {
				asked++
			}
		}
		if asked != maxElicits {
			t.Errorf("asked %d in all, want %d", asked, maxElicits)
		}
	})
}
