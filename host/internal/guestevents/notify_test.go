package guestevents

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/abi"
)

// events records what passes through.
type events struct {
	mu       sync.Mutex
	progress []string
	status   []string
	logs     []string
}

func (e *events) Progress(p, total float64, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.progress = append(e.progress, fmt.Sprintf("%g/%g %s", p, total, msg))
}

func (e *events) Status(msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status = append(e.status, msg)
}

func (e *events) Log(level int32, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logs = append(e.logs, fmt.Sprintf("%d:%s", level, msg))
}

func (e *events) Elicit(context.Context, abi.ElicitRequest) (abi.ElicitReply, error) {
	return abi.ElicitReply{}, errors.ErrUnsupported
}

// TestNotifierBurstThenRate: a flood of log messages passes the burst at
// once, then Rate a second; the rest is counted in one warning.
func TestNotifierBurstThenRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &events{}
		n := New(ev)
		for i := range 1000 {
			n.Log(abi.LogInfo, fmt.Sprint(i))
		}
		time.Sleep(time.Second) // Rate tokens come back
		for i := range 1000 {
			n.Log(abi.LogInfo, fmt.Sprint(i))
		}
		n.Finish()
		sent := len(ev.logs) - 1
		if want := Burst + Rate; sent != want {
			t.Errorf("sent %d log messages, want %d", sent, want)
		}
		want := fmt.Sprintf("2:wasmtask: %d notifications from this call were dropped (more than %d a second)", 2000-sent, Rate)
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
		n := New(ev)
		n.Progress(5, 10, "five")
		n.Progress(5, 10, "again") // not forward: dropped
		n.Progress(4, 10, "back")  // dropped
		for i := 6; i < 6+Burst+10; i++ {
			n.Progress(float64(i), 100, "")
		}
		// The burst is spent: the last report waits.
		if got := len(ev.progress); got != Burst {
			t.Fatalf("sent %d progress reports before the rate applies, want %d", got, Burst)
		}
		time.Sleep(time.Second)
		n.Status("s") // a token: the waiting report goes first
		n.Finish()
		want := fmt.Sprintf("%d/100 ", 6+Burst+9)
		if got := ev.progress[Burst]; got != want {
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
	n := New(ev)
	n.Progress(1, 2, "half")
	n.Status("working")
	n.Log(abi.LogInfo, "hi")
	n.Finish()
	got := map[string][]string{"progress": ev.progress, "status": ev.status, "logs": ev.logs}
	want := map[string][]string{"progress": {"1/2 half"}, "status": {"working"}, "logs": {"1:hi"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}
