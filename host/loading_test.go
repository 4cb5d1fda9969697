package host

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// heldLoader holds back the loads of the modules named in hold until their
// channel is closed (or the load's context ends).
type heldLoader struct {
	plugins.Loader[*wasmrt.Module]
	hold map[string]chan struct{}
}

func (h heldLoader) Load(ctx context.Context, m plugins.Module, wasm []byte) (*wasmrt.Module, *abi.Manifest, error) {
	if ch := h.hold[m.Name]; ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return h.Loader.Load(ctx, m, wasm)
}

func holding(hold map[string]chan struct{}) func(plugins.Loader[*wasmrt.Module]) plugins.Loader[*wasmrt.Module] {
	return func(l plugins.Loader[*wasmrt.Module]) plugins.Loader[*wasmrt.Module] { return heldLoader{l, hold} }
}

// TestSlowModuleDelaysOnlyItself: while one module's load is held back, the
// server starts, answers initialize, serves the other module's tool and
// reports the held one as loading; once it loads it is served and clients
// are told the list changed.
func TestSlowModuleDelaysOnlyItself(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	put(t, dir, "slow.wasm", verModule(t, "beta", "beta-1"))
	gate := make(chan struct{})
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir,
		wrapLoader: holding(map[string]chan struct{}{"slow": gate})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	h := hosttest.NewHTTPClient(t, srv.URL+HTTPPath)
	h.HC = srv.Client()
	h.Initialize(nil)
	defer h.Close()

	if got := answer(t, h.Call("tools/call", map[string]any{"name": "alpha", "arguments": map[string]any{}})); got != "alpha-1" {
		t.Fatalf("call of the loaded tool = %q, want alpha-1", got)
	}
	c := s.catalog.Load()
	if c.gen.Loading() != 1 || len(c.problems) != 1 || !errors.Is(c.problems[0].Err, plugins.ErrLoading) {
		t.Fatalf("while slow.wasm loads: %d loading, problems %v; want 1 and slow.wasm still loading", c.gen.Loading(), c.problems)
	}
	notes, stop := notifications(t, h)
	defer stop()

	close(gate)
	if got := listTools(t, h); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("tools/list once slow.wasm loaded = %v, want [alpha beta]", got)
	}
	told := false
	for m := range notes {
		if told = m.Method == "notifications/tools/list_changed"; told {
			break
		}
	}
	if !told {
		t.Error("no notifications/tools/list_changed when slow.wasm was served")
	}
	if ps := s.Problems(); len(ps) != 0 {
		t.Errorf("problems after every load: %v, want none", ps)
	}
}

// TestInitializeBeforeAnyLoad: a starting server answers initialize while
// no module has loaded yet; tools/list then waits for the first loads.
func TestInitializeBeforeAnyLoad(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	gate := make(chan struct{})
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir,
		wrapLoader: holding(map[string]chan struct{}{"a": gate})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	h := hosttest.NewHTTPClient(t, srv.URL+HTTPPath)
	h.HC = srv.Client()
	h.Initialize(nil) // fails the test unless answered
	defer h.Close()
	if n := s.catalog.Load().gen.Loading(); n != 1 {
		t.Fatalf("%d modules loading after initialize, want 1 (the held one)", n)
	}
	close(gate)
	if got := listTools(t, h); !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("tools/list = %v, want [alpha]", got)
	}
}

// TestCloseWhileLoading: Close ends a load in progress, releases whoever
// waits for the first loads, and returns (a hang fails the test).
func TestCloseWhileLoading(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir,
		wrapLoader: holding(map[string]chan struct{}{"a": make(chan struct{})})})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []Problem)
	go func() { done <- s.Problems() }() // waits for the first loads
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-done // Close releases whoever waits for the loads
}
