package host

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

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

// TestStartupSaysWhatItDoes: a start that compiles modules says so at once,
// naming the compile cache, and says how many tools it loaded, and in how
// long, once the last module found at start has loaded. A held load stands
// in for a slow compile.
func TestStartupSaysWhatItDoes(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	put(t, dir, "b.wasm", verModule(t, "beta", "beta-1"))
	gate := make(chan struct{})
	logs := newLogSink()
	cacheDir := t.TempDir() // a first run
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: cacheDir, Logger: slog.New(logs),
		wrapLoader: holding(map[string]chan struct{}{"b": gate})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	find := func(prefix string) []string {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		var out []string
		for _, l := range logs.lines {
			if strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return out
	}
	// New has read the directory: the first line is written.
	want := "INFO compiling 2 modules in the background (a first run fills the compile cache at " + cacheDir + "; later starts read it)"
	if got := find("INFO compiling"); len(got) != 1 || !strings.HasPrefix(got[0], want+" modules=2 cacheDir="+cacheDir) {
		t.Errorf("start-up lines %q, want one starting %q", got, want)
	}
	if got := find("INFO loaded"); len(got) != 0 {
		t.Errorf("%q logged while b.wasm still loads", got)
	}

	close(gate)
	_ = s.Tools() // returns once the modules found at start have loaded
	got := find("INFO loaded")
	if len(got) != 1 || !regexp.MustCompile(`^INFO loaded 2 tools from 2 modules in \S+ tools=2 modules=2 problems=0 duration=\S+$`).MatchString(got[0]) {
		t.Errorf("lines once loaded %q, want one saying 2 tools from 2 modules, and how long", got)
	}

	// A reload later compiles too, and says nothing of the kind.
	put(t, dir, "c.wasm", verModule(t, "gamma", "gamma-1"))
	await(s, func(c *catalog) bool { _, ok := c.tool("gamma"); return ok })
	if got := find("INFO compiling"); len(got) != 1 {
		t.Errorf("start-up lines after a reload %q, want the one of the start", got)
	}
	if got := find("INFO loaded"); len(got) != 1 {
		t.Errorf("loaded lines after a reload %q, want the one of the start", got)
	}

	// The next start reads the cache, and says so, not "a first run".
	s.Close()
	warmLogs := newLogSink()
	warm, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: cacheDir, Logger: slog.New(warmLogs)})
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	warm.Tools()
	warmLogs.mu.Lock()
	defer warmLogs.mu.Unlock()
	if got := warmLogs.grepLocked([]string{"INFO loading 3 modules in the background (from the compile cache at " + cacheDir}); len(got) != 1 {
		t.Errorf("a warm start's lines %q, want one saying it loads from the compile cache", warmLogs.lines)
	}
	if got := warmLogs.grepLocked([]string{"first run"}); len(got) != 0 {
		t.Errorf("a warm start speaks of a first run: %q", got)
	}
}

// Without a compile cache the first line says every start compiles.
func TestStartupWithoutCache(t *testing.T) {
	logs := newLogSink()
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"a.wasm": {Data: verModule(t, "alpha", "alpha-1")}}, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Tools()
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if !slices.ContainsFunc(logs.lines, func(l string) bool {
		return strings.HasPrefix(l, "INFO compiling 1 module in the background (no compile cache: every start compiles them)")
	}) {
		t.Errorf("log %q lacks the start-up line without a cache", logs.lines)
	}
}

// TestEmptyToolDirectoryWarns: a tool directory with no module is served
// (it is watched), with one warning saying nothing is served yet; a
// directory with a module gets none.
func TestEmptyToolDirectoryWarns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modules int
		want    int
	}{{"empty", 0, 1}, {"one module", 1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.modules > 0 {
				put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
			}
			logs := newLogSink()
			s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir, Logger: slog.New(logs)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			<-s.started
			logs.mu.Lock()
			defer logs.mu.Unlock()
			n := 0
			for _, l := range logs.lines {
				if strings.HasPrefix(l, "WARN the tool directory holds no .wasm modules") {
					n++
				}
			}
			if n != tc.want {
				t.Errorf("%d warnings of an empty directory, want %d: %q", n, tc.want, logs.lines)
			}
		})
	}
}
