package guestevents

import (
	"context"
	"fmt"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

// Bounds on the notifications one call sends its client: a burst, then a
// steady rate. A guest that reports progress in a tight loop would
// otherwise send a notification per iteration, and every one of them is a
// message the client's connection carries and the client parses.
const (
	Burst = 32 // notifications sent at once before the rate applies
	Rate  = 20 // notifications per second after the burst
)

// Notifier is the abi.Events the guest's host functions and stderr reach.
// It passes progress, status and log on to the call's Events through a
// token bucket:
//   - progress only moves forward (a value not above the last one sent is
//     dropped), and when no token is left the latest report waits to be
//     sent (coalesced) rather than dropped;
//   - status likewise keeps the latest message waiting;
//   - a log message with no token is dropped;
//   - Finish sends what waits, then one warning counting what was dropped
//     or coalesced away.
//
// It is used by the one goroutine running the guest (host functions and
// the stderr writer run on it), so it has no lock. Elicit is passed on
// as is: the elicit host function bounds it (wasmrt's elicitBudget).
type Notifier struct {
	ev abi.Events

	tokens float64
	last   time.Time // when tokens was last refilled

	sentProgress bool
	lastProgress float64 // the last progress value sent
	progress     *progressNote
	status       *string
	dropped      int
}

type progressNote struct {
	progress, total float64
	msg             string
}

// New returns the Notifier of one call, passing what it lets through to ev.
func New(ev abi.Events) *Notifier {
	return &Notifier{ev: ev, tokens: Burst, last: time.Now()}
}

// take spends a token when one is left.
func (n *Notifier) take() bool {
	now := time.Now()
	n.tokens = min(Burst, n.tokens+now.Sub(n.last).Seconds()*Rate)
	n.last = now
	if n.tokens < 1 {
		return false
	}
	n.tokens--
	return true
}

// flush sends what waits while tokens last.
func (n *Notifier) flush() {
	if n.progress != nil && n.take() {
		p := n.progress
		n.progress = nil
		n.sendProgress(p)
	}
	if n.status != nil && n.take() {
		s := *n.status
		n.status = nil
		n.ev.Status(s)
	}
}

func (n *Notifier) sendProgress(p *progressNote) {
	n.sentProgress, n.lastProgress = true, p.progress
	n.ev.Progress(p.progress, p.total, p.msg)
}

// Progress passes a progress report on, forward only, coalescing what
// finds no token.
func (n *Notifier) Progress(progress, total float64, msg string) {
	floor := n.lastProgress
	if n.progress != nil {
		floor = n.progress.progress
	}
	if (n.sentProgress || n.progress != nil) && progress <= floor {
		n.dropped++ // MCP: progress increases with each notification
		return
	}
	n.flush()
	p := &progressNote{progress, total, msg}
	if n.progress == nil && n.take() {
		n.sendProgress(p)
		return
	}
	if n.progress != nil {
		n.dropped++ // replaced by a newer report
	}
	n.progress = p
}

// Status passes a status message on, coalescing what finds no token.
func (n *Notifier) Status(msg string) {
	n.flush()
	if n.status == nil && n.take() {
		n.ev.Status(msg)
		return
	}
	if n.status != nil {
		n.dropped++
	}
	n.status = &msg
}

// Log passes a log message on, or drops it when no token is left.
func (n *Notifier) Log(level int32, msg string) {
	n.flush()
	if !n.take() {
		n.dropped++
		return
	}
	n.ev.Log(level, msg)
}

// Notice sends a warning of the host's own about the call, past the rate
// limit (once per call, so that it is not lost).
func (n *Notifier) Notice(msg string) {
	n.ev.Log(abi.LogWarning, msg)
}

// Elicit passes the question on as is.
func (n *Notifier) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	return n.ev.Elicit(ctx, req)
}

// BeginTask passes begin_task on to the call's Events (false when they
// cannot make the call a task).
func (n *Notifier) BeginTask() bool {
	b, ok := n.ev.(abi.TaskBeginner)
	return ok && b.BeginTask()
}

// Asker is the call's Events' way to ask the client for a message and its
// roots (abi.Asker), nil when they have none. Those requests pass as is:
// they are bounded as questions are (one answer each, counted by the
// runtime and the MCP layer).
func (n *Notifier) Asker() abi.Asker {
	a, _ := n.ev.(abi.Asker)
	return a
}

// Finish sends the reports still waiting and says how many were dropped.
// It is called once, when the guest has ended.
func (n *Notifier) Finish() {
	if p := n.progress; p != nil {
		n.progress = nil
		n.sendProgress(p)
	}
	if s := n.status; s != nil {
		n.status = nil
		n.ev.Status(*s)
	}
	if n.dropped > 0 {
		n.ev.Log(abi.LogWarning, fmt.Sprintf("wasmtask: %d notifications from this call were dropped (more than %d a second)", n.dropped, Rate))
	}
}
