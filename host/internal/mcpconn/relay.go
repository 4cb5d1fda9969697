package mcpconn

import (
	"context"
	"sync"

	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// StatusRelay carries a session's task status changes from the engine,
// which must not block, to the connection, which may: the latest unsent
// status per task (Follow), in the order the tasks changed, written by one
// goroutine per session (Run). No goroutine per task. Its maps hold at most one entry per task
// of the session being followed (the engine bounds those). It is safe for
// concurrent use; Run's return ends it.
type StatusRelay struct {
	mu      sync.Mutex
	pending map[string]mcpwire.Task // latest unsent status, by task ID
	order   []string                // task IDs in pending, oldest change first
	stops   map[string]func()       // the engine's callbacks to end, by task ID
	ended   bool
	wake    chan struct{} // capacity 1: something is pending
}

// NewStatusRelay returns a relay that writes nothing until Run.
func NewStatusRelay() *StatusRelay {
	return &StatusRelay{pending: make(map[string]mcpwire.Task), stops: make(map[string]func()), wake: make(chan struct{}, 1)}
}

// Follow has notifications/tasks/status sent for each change of task id
// (of owner, in e) in its status or status message, as render words the
// task, until the task ends or the relay does.
func (r *StatusRelay) Follow(e *taskengine.Engine, owner, id string, render func(taskengine.Task) mcpwire.Task) {
	if !r.reserve(id) {
		return
	}
	// Called under the engine's lock, one change at a time per task: a
	// new status, or a new message within one (a queued task's place, the
	// tool's own status), is what a client polling tasks/get would see
	// change.
	last, lastMsg := taskengine.StatusWorking, ""
	stop, err := e.OnChange(owner, id, func(t taskengine.Task) {
		if t.Status == last && t.StatusMessage == lastMsg {
			return
		}
		last, lastMsg = t.Status, t.StatusMessage
		r.put(render(t), t.Status.Terminal())
	})
	r.track(id, stop, err)
}

// put records t as its task's latest status (terminal: its last). It
// never blocks.
func (r *StatusRelay) put(t mcpwire.Task, terminal bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	if _, ok := r.pending[t.TaskID]; !ok {
		r.order = append(r.order, t.TaskID)
	}
	r.pending[t.TaskID] = t
	if terminal {
		delete(r.stops, t.TaskID) // the engine calls no more
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// reserve makes room for a task's callback before it is registered (the
// engine may call it at once, and report the task's end, before
// OnChange returns). It reports false when the relay has ended.
func (r *StatusRelay) reserve(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	r.stops[id] = func() {}
	return true
}

// track keeps the end of a task's callback, for when the session ends
// first: unless the task already ended (put removed its place), the
// session is over, or there is no callback (err).
func (r *StatusRelay) track(id string, stop func(), err error) {
	r.mu.Lock()
	_, keep := r.stops[id]
	keep = keep && err == nil
	if keep {
		r.stops[id] = stop
	} else if r.stops != nil {
		delete(r.stops, id)
	}
	r.mu.Unlock()
	if !keep && err == nil {
		stop()
	}
}

// Run writes the pending statuses with notify (Conn.NotifyTaskStatus)
// until ctx is done or a write fails, then ends every callback still
// registered.
func (r *StatusRelay) Run(ctx context.Context, notify func(mcpwire.Task) error) {
	defer r.end()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		for {
			t, ok := r.next()
			if !ok {
				break
			}
			if notify(t) != nil {
				return
			}
		}
	}
}

// next takes the oldest pending status.
func (r *StatusRelay) next() (mcpwire.Task, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return mcpwire.Task{}, false
	}
	id := r.order[0]
	r.order[0] = ""
	r.order = r.order[1:]
	t := r.pending[id]
	delete(r.pending, id)
	return t, true
}

// end stops the relay: no more puts, every callback ended.
func (r *StatusRelay) end() {
	r.mu.Lock()
	r.ended = true
	stops := r.stops
	r.stops, r.pending, r.order = nil, nil, nil
	r.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
