package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// events records what a call reports; elicit answers input requests (nil:
// unsupported).
type events struct {
	mu     sync.Mutex
	logs   []string
	status []string
	elicit func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error)
}

func (e *events) Progress(float64, float64, string) {}

func (e *events) Status(msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status = append(e.status, msg)
}

func (e *events) Log(_ int32, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logs = append(e.logs, msg)
}

func (e *events) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	if e.elicit == nil {
		return abi.ElicitReply{}, fmt.Errorf("no user here: %w", errors.ErrUnsupported)
	}
	return e.elicit(ctx, req)
}

func newServer(t *testing.T, cfg host.Config) *host.Server {
	t.Helper()
	s, err := host.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Server.Call is the path tools/call takes: the tool's policy applies, the
// arguments are validated once, and each failure has its typed error.
func TestCallPath(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Policy: &host.Policy{Modules: map[string]host.ModulePolicy{
		"sha256": {Tools: map[string]host.ToolPolicy{"sha256": {MaxOutputBytes: 10}}}, // its answer does not fit
	}}})
	ev := &events{}
	res, err := s.Call(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), ev)
	if err != nil || res.Content[0].Text != "3" {
		t.Fatalf("add 1+2 = %+v, %v; want 3", res, err)
	}
	if len(ev.logs) == 0 {
		t.Error("the tool's log reached no event, want its log line")
	}

	_, err = s.Call(ctx, "add", json.RawMessage(`{"a":"one"}`), nil)
	var ae *host.ArgumentsError
	if !errors.Is(err, host.ErrArguments) || !errors.As(err, &ae) || ae.Tool != "add" {
		t.Errorf("bad arguments = %v, want an ArgumentsError", err)
	}
	if _, err := s.Call(ctx, "nope", nil, nil); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("unknown tool = %v, want ErrUnknownTool", err)
	}
	_, err = s.Call(ctx, "sha256", json.RawMessage(`{"text":"abc"}`), nil)
	var ge *host.GuestError
	if !errors.As(err, &ge) || ge.Kind != host.KindOutputTooLarge || ge.Tool != "sha256" {
		t.Errorf("sha256 with 10 bytes of output = %v, want a GuestError of kind %q", err, host.KindOutputTooLarge)
	}
}

// A canceled call ends even while its guest waits for the user, and a call
// past its policy's timeout is a timeout.
func TestCallCancelAndTimeout(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Policy: &host.Policy{Modules: map[string]host.ModulePolicy{
		"demo": {Tools: map[string]host.ToolPolicy{"slow_count": {Timeout: host.Duration(100 * time.Millisecond)}}},
	}}})

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	asked := make(chan string, 1)
	ev := &events{elicit: func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
		asked <- req.Message
		cancel()
		<-ctx.Done()
		return abi.ElicitReply{}, ctx.Err()
	}}
	_, err := s.Call(cctx, "long_job", json.RawMessage(`{"steps":2,"delay_ms":1}`), ev)
	if !errors.Is(err, context.Canceled) || len(asked) != 1 {
		t.Errorf("canceled during elicitation: err %v, %d questions; want context.Canceled after one", err, len(asked))
	}

	_, err = s.Call(ctx, "slow_count", json.RawMessage(`{"steps":1000,"delay_ms":100}`), nil)
	var ge *host.GuestError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ge) || ge.Kind != host.KindTimeout {
		t.Errorf("slow_count past its timeout = %v, want a timeout GuestError", err)
	}
}

// Tools reports the limits every tool gets, the numbers a call applies;
// a policy entry that matches no module, or a tool its module does not
// declare, is a problem.
func TestToolsShowEffectivePolicy(t *testing.T) {
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Policy: &host.Policy{
		Defaults: host.ToolPolicy{MaxConcurrency: 2},
		Modules: map[string]host.ModulePolicy{
			"add":          {Tools: map[string]host.ToolPolicy{"add": {MemoryMiB: 8}, "no_such_tool": {MemoryMiB: 8}}},
			"no_such_file": {Grants: host.Grants{Env: map[string]string{"A": "1"}}},
		},
	}})
	got := map[string]host.ToolInfo{}
	for _, ti := range s.Tools() {
		got[ti.Name] = ti
		if !strings.HasPrefix(ti.Digest, "sha256:") || ti.Module == "" {
			t.Errorf("%s: module %q digest %q, want a name and a sha256 digest", ti.Name, ti.Module, ti.Digest)
		}
	}
	want := host.ToolPolicy{MemoryMiB: 8, Timeout: host.Duration(host.DefaultTimeout), MaxOutputBytes: host.DefaultMaxOutputBytes,
		MaxResultBlocks: host.DefaultMaxResultBlocks, MaxResultDepth: host.DefaultMaxResultDepth, MaxResultValues: host.DefaultMaxResultValues,
		MaxLogBytes: host.DefaultMaxLogBytes, MaxConcurrency: 2, MaxQueue: 8}
	if p := got["add"].Policy; fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("add's policy = %+v, want %+v", p, want)
	}
	// The module's default share: a quarter of the server's instances and
	// of its memory budget.
	lim := s.Limits()
	if ti := got["add"]; ti.ReservedMemoryMiB != 11 || ti.ModuleInstances != host.DefaultMaxInstances/4 || ti.ModuleMemoryMiB != lim.MemoryBudgetMiB/4 {
		t.Errorf("add reserves %d MiB in a module of %d instances and %d MiB, want 11 (8 + 2 × 1 MiB of output + 3 × 64 KiB of log, rounded up), %d and %d",
			ti.ReservedMemoryMiB, ti.ModuleInstances, ti.ModuleMemoryMiB, host.DefaultMaxInstances/4, lim.MemoryBudgetMiB/4)
	}
	if p := got["sha256"].Policy; p.MemoryMiB != host.DefaultMemoryMiB || p.MaxConcurrency != 2 {
		t.Errorf("sha256's policy = %+v, want the defaults with 2 concurrent calls", p)
	}
	var texts []string
	for _, p := range s.Problems() {
		if !errors.Is(p.Err, host.ErrPolicy) {
			t.Errorf("problem %v, want only policy problems", p)
		}
		texts = append(texts, p.String())
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "modules.add.tools.no_such_tool") || !strings.Contains(texts[1], "modules.no_such_file matches no module") {
		t.Errorf("problems = %q, want one naming modules.add.tools.no_such_tool and one modules.no_such_file", texts)
	}
	if l := s.Limits(); l.MaxInstances != host.DefaultMaxInstances || l.MemoryBudgetMiB <= 0 || l.MemoryBudgetSrc == "" {
		t.Errorf("Limits() = %+v, want the default instances and a budget derived from the machine", l)
	}
}

// A tool directory that does not exist is an error at start, not an empty
// server.
func TestMissingToolsDir(t *testing.T) {
	_, err := host.New(context.Background(), host.Config{ToolsDir: t.TempDir() + "/missing", CacheDir: host.CompileCacheDir()})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("New with a missing tool directory = %v, want an error naming it", err)
	}
}
