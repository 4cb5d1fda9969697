package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// ErrBusy is wrapped by the tool error of a call refused because its tool,
// or the server, already runs and queues as many calls as the policy allows.
var ErrBusy = errors.New("host: tool busy")

// generation is what the registry serves between two reloads.
type generation = plugins.Generation[*wasmrt.Module]

// registry is the served tool set: an atomically swapped generation of
// loaded modules, the operator's policy, and the semaphores bounding
// concurrent calls. It implements mcpserver.Tools and is safe for concurrent
// use.
type registry struct {
	rt     *wasmrt.Runtime
	policy *Policy
	log    *slog.Logger
	getenv func(string) (string, bool)

	gen atomic.Pointer[generation]

	instances *gate // server-wide

	mu    sync.Mutex
	tools map[string]*toolSlot // by tool name; pruned to the served tools on swap
	calls map[*wasmrt.Module]map[*inflightCall]struct{}
}

// toolSlot is what the policy makes of one tool, resolved on its first call
// (the policy never changes): its gate and its runtime limits, PassEnv read
// from the environment then.
type toolSlot struct {
	gate *gate
	lim  wasmrt.Limits
}

type inflightCall struct{ cancel context.CancelCauseFunc }

func newRegistry(rt *wasmrt.Runtime, p *Policy, log *slog.Logger) *registry {
	maxInst := DefaultMaxInstances
	if p != nil && p.MaxInstances > 0 {
		maxInst = p.MaxInstances
	}
	return &registry{
		rt:        rt,
		policy:    p,
		log:       log,
		getenv:    os.LookupEnv,
		instances: newGate(maxInst, 4*maxInst),
		tools:     map[string]*toolSlot{},
		calls:     map[*wasmrt.Module]map[*inflightCall]struct{}{},
	}
}

// List implements mcpserver.Tools.
func (r *registry) List() []abi.Tool {
	g := r.gen.Load()
	var out []abi.Tool
	for _, name := range g.ToolNames() {
		if _, t, ok := g.Tool(name); ok {
			out = append(out, t)
		}
	}
	return out
}

// Call implements mcpserver.Tools: it runs one call in a fresh instance of
// the module that serves name now, within the tool's policy.
func (r *registry) Call(ctx context.Context, name string, args json.RawMessage, ev mcpserver.Events) (*abi.Result, error) {
	ts := r.slot(name)
	if err := ts.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	defer ts.gate.leave()
	if err := r.instances.enter(ctx); err != nil {
		return nil, fmt.Errorf("tool %q: server-wide instance limit: %w", name, err)
	}
	defer r.instances.leave()

	// A reload may close the module between looking it up and calling it;
	// the new generation then serves the tool (or no longer has it).
	for attempt := 0; ; attempt++ {
		l, _, ok := r.gen.Load().Tool(name)
		if !ok {
			return nil, fmt.Errorf("%w: %q", mcpserver.ErrUnknownTool, name)
		}
		res, err := r.callModule(ctx, l.Compiled, name, args, ts.lim, ev)
		if neverRan(err) && attempt < 3 && ctx.Err() == nil {
			continue
		}
		return res, err
	}
}

func (r *registry) callModule(ctx context.Context, m *wasmrt.Module, name string, args json.RawMessage, lim wasmrt.Limits, ev mcpserver.Events) (*abi.Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &inflightCall{cancel: cancel}
	r.mu.Lock()
	set := r.calls[m]
	if set == nil {
		set = map[*inflightCall]struct{}{}
		r.calls[m] = set
	}
	set[c] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(set, c)
		if len(set) == 0 {
			delete(r.calls, m)
		}
		r.mu.Unlock()
	}()
	var wev wasmrt.Events
	if ev != nil {
		wev = events{ev}
	}
	res, err := m.Call(ctx, name, args, lim, wev)
	if neverRan(err) {
		return nil, err // Call retries on the new generation
	}
	// Whatever the guest did after its module was removed (a guest woken
	// from a sleep by the cancel may still exit with a result), the call
	// ends with the removal.
	if context.Cause(ctx) == errModuleRemoved {
		return nil, fmt.Errorf("tool %q: %w", name, errModuleRemoved)
	}
	return res, err
}

var errModuleRemoved = errors.New("the module was removed from the tool directory")

// neverRan reports whether err says the module was closed before the call
// could start on it (not a guest stopped by a closing runtime).
func neverRan(err error) bool {
	var ge *wasmrt.GuestError
	return errors.Is(err, wasmrt.ErrClosed) && !errors.As(err, &ge)
}

// cancelCalls ends the calls in flight on m (used when the operator asked
// for removed modules' work to stop).
func (r *registry) cancelCalls(m *wasmrt.Module) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.calls[m] {
		c.cancel(errModuleRemoved)
	}
}

// swap installs g and prunes the slots of tools no longer served.
func (r *registry) swap(g *generation) {
	r.gen.Store(g)
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.tools {
		if _, _, ok := g.Tool(name); !ok {
			delete(r.tools, name)
		}
	}
}

func (r *registry) slot(name string) *toolSlot {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.tools[name]
	if ts == nil {
		// Bounded by the served tools: swap prunes the others, and a
		// generation holds at most MaxModules × abi.MaxTools tools.
		pol := r.policy.forTool(name)
		ts = &toolSlot{gate: newGate(pol.MaxConcurrency, pol.MaxQueue), lim: limitsOf(pol, r.getenv)}
		r.tools[name] = ts
	}
	return ts
}

// events adapts mcpserver.Events to wasmrt.Events.
type events struct{ mcpserver.Events }

func (e events) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	rep, err := e.Events.Elicit(ctx, req)
	if errors.Is(err, mcpserver.ErrElicitUnsupported) {
		return rep, fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
	}
	return rep, err
}

// gate admits at most n concurrent holders and lets at most q more wait.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int64
	queue   int64
}

func newGate(n, q int) *gate { return &gate{slots: make(chan struct{}, n), queue: int64(q)} }

func (g *gate) enter(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	if g.waiting.Add(1) > g.queue {
		g.waiting.Add(-1)
		return fmt.Errorf("%w: %d calls running and %d queued", ErrBusy, cap(g.slots), g.queue)
	}
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (g *gate) leave() { <-g.slots }

func (d Duration) std() time.Duration { return time.Duration(d) }
