package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// TestListAndCallAgree rewrites every module of a tool directory over and
// over (a new version of each, renamed into place) while a client lists the
// tools and calls every tool listed, over MCP. tools/list and tools/call
// read one catalog each, and a request holds the catalog it read: a listed
// tool is never unknown to call, never fails because its module was
// replaced under the call, and a tool that is not listed is unknown.
func TestListAndCallAgree(t *testing.T) {
	const modules = 4
	dir := t.TempDir()
	tool := func(i int) string { return fmt.Sprintf("t%d", i) }
	for i := range modules {
		put(t, dir, fmt.Sprintf("m%d.wasm", i), verModule(t, tool(i), "v0"))
	}
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.ready(context.Background(), "")
	c := hosttest.Stdio(t, func(in io.Reader, out io.Writer) error {
		if err := s.ServeStdio(context.Background(), in, out); !errors.Is(err, ErrServerClosed) {
			return err
		}
		return nil
	})
	c.Initialize(nil)

	// Versions are built here: the writer goroutine must not fail the test
	// itself (t.Fatal belongs to the test goroutine).
	var wasms [][]byte
	for v := range 16 {
		wasms = append(wasms, verModule(t, tool(v%modules), fmt.Sprintf("v%d", v+1)))
	}
	// The writer replaces one module after another, each time as soon as
	// the previous replacement is served, until the client has seen enough.
	ctx, stop := context.WithCancel(context.Background())
	var writer sync.WaitGroup
	writer.Go(func() {
		for v := 1; ctx.Err() == nil; v++ {
			seq := s.catalog.Load().gen.Seq()
			i := (v % len(wasms)) % modules
			file := filepath.Join(dir, fmt.Sprintf("m%d.wasm", i))
			if err := os.WriteFile(file+".tmp", wasms[v%len(wasms)], 0o644); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(file+".tmp", file); err != nil {
				t.Error(err)
				return
			}
			_ = s.awaitCatalog(ctx, func(c *catalog) bool { return c.gen.Seq() > seq })
		}
	})
	defer func() { stop(); writer.Wait() }()

	want := []string{tool(0), tool(1), tool(2), tool(3)}
	first := s.catalog.Load().gen.Seq()
	calls := 0
	// Until the directory has been reloaded many times under the client:
	// the count of reloads, not the time, ends the test.
	for s.catalog.Load().gen.Seq() < first+12 {
		var list struct{ Tools []struct{ Name string } }
		if err := c.Call("tools/list", nil).Decode(&list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, want) {
			t.Fatalf("tools/list = %v, want %v: a rewrite is atomic, every tool is always served", names, want)
		}
		for _, name := range names {
			r := c.Call("tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
			var res hosttest.ToolResult
			if err := r.Decode(&res); err != nil || res.IsError || len(res.Text()) < 2 || res.Text()[0] != 'v' {
				t.Fatalf("tools/call %s after tools/list listed it = %s (%v), want its version", name, r.Raw, err)
			}
			calls++
		}
		if r := c.Call("tools/call", map[string]any{"name": "t9"}); r.Code() != -32602 {
			t.Fatalf("tools/call of a tool never listed = %s, want -32602", r.Raw)
		}
	}
	t.Logf("%d calls of listed tools across %d reloads", calls, s.catalog.Load().gen.Seq()-first)
}

// TestCatalogHeldByItsCalls: a call dispatched through a catalog runs on it
// even when a reload retires the catalog first, and the retired catalog's
// modules close when its last holder lets go.
func TestCatalogHeldByItsCalls(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "m.wasm", verModule(t, "t", "v1"))
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.ready(context.Background(), "")
	old, release := s.acquire()
	code := old.tools["t"].code

	put(t, dir, "m.wasm", verModule(t, "t", "v2"))
	ctx := context.Background()
	if err := s.awaitCatalog(ctx, func(c *catalog) bool { return c != old }); err != nil {
		t.Fatal(err)
	}
	res, _, err := s.call(ctx, old, mcpserver.Caller{}, "t", nil, nil)
	if err != nil || res.Content[0].Text != "v1" {
		t.Errorf("call through the retired catalog = %v, %v; want v1 from its own module", res, err)
	}
	select {
	case <-code.Done():
		t.Fatal("the retired catalog's module closed while the catalog was held")
	default:
	}
	release()
	<-code.Done() // closed after the last holder; a leak hangs here
	if res, err := s.Call(ctx, "t", nil, nil); err != nil || res.Content[0].Text != "v2" {
		t.Errorf("call after the reload = %v, %v; want v2", res, err)
	}
}

// laterLoadsHeld lets the first load of each module name through and holds
// every later one until gate is closed.
type laterLoadsHeld struct {
	plugins.Loader[*wasmrt.Module]
	gate chan struct{}
	mu   sync.Mutex
	seen map[string]bool
}

func (h *laterLoadsHeld) Load(ctx context.Context, m plugins.Module, wasm []byte) (*wasmrt.Module, *abi.Manifest, error) {
	h.mu.Lock()
	again := h.seen[m.Name]
	h.seen[m.Name] = true
	h.mu.Unlock()
	if again {
		select {
		case <-h.gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return h.Loader.Load(ctx, m, wasm)
}

// TestModuleKeptWhileLoadingStaysOpenForOlderHolders: a module kept serving
// while its next version loads is used by two catalogs in a row. When the
// new version is served, the module is released by the second catalog; a
// request still holding the first one must find it open.
func TestModuleKeptWhileLoadingStaysOpenForOlderHolders(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "m.wasm", verModule(t, "t", "v1"))
	held := &laterLoadsHeld{gate: make(chan struct{}), seen: map[string]bool{}}
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir,
		wrapLoader: func(l plugins.Loader[*wasmrt.Module]) plugins.Loader[*wasmrt.Module] { held.Loader = l; return held }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	_ = s.ready(ctx, "")
	first, release := s.acquire()
	v1 := first.tools["t"].code

	put(t, dir, "m.wasm", verModule(t, "t", "v2"))
	if err := s.awaitCatalog(ctx, func(c *catalog) bool { return c != first }); err != nil {
		t.Fatal(err)
	}
	if c := s.catalog.Load(); c.tools["t"].code != v1 || c.gen.Loading() != 1 {
		t.Fatalf("while v2 loads: serving %p with %d loading, want v1's module %p and 1 loading", c.tools["t"].code, c.gen.Loading(), v1)
	}
	close(held.gate)
	if err := s.awaitCatalog(ctx, func(c *catalog) bool { return c.tools["t"].code != v1 }); err != nil {
		t.Fatal(err)
	}
	if res, _, err := s.call(ctx, first, mcpserver.Caller{}, "t", nil, nil); err != nil || res.Content[0].Text != "v1" {
		t.Fatalf("call through the first catalog after v2 is served = %v, %v; want v1 from its own module", res, err)
	}
	release()
	<-v1.Done() // closed after the last holder; a leak hangs here
}
