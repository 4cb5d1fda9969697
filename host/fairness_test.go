package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// limitLoader stands for modules whose describe runs into its time limit:
// the load of a module whose name starts with "bad" is held until its gate
// is closed and then fails as wasmrt reports a describe past its limit (an
// error wrapping context.DeadlineExceeded). It records the order in which
// loads began.
type limitLoader struct {
	plugins.Loader[*wasmrt.Module]
	gates map[string]chan struct{}
	began chan<- string
}

func (l limitLoader) Load(ctx context.Context, m plugins.Module, wasm []byte) (*wasmrt.Module, *abi.Manifest, error) {
	l.began <- m.Name
	if strings.HasPrefix(m.Name, "bad") {
		select {
		case <-l.gates[m.Name]:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("load %q: describe failed: %w", m.Name, context.DeadlineExceeded)
	}
	return l.Loader.Load(ctx, m, wasm)
}

// TestStartListsGoodModulesFirst: at start, the module the policy names
// loads before the bad modules of the same directory, whatever their
// sizes, and tools/list answers with it as soon as it has loaded and a bad
// module has hit its limit — while the other bad modules still load. They
// are not loaded again on a rescan.
func TestStartListsGoodModulesFirst(t *testing.T) {
	dir := t.TempDir()
	gates := map[string]chan struct{}{}
	for i := range 4 {
		name := fmt.Sprintf("bad%d", i)
		gates[name] = make(chan struct{})
		put(t, dir, name+".wasm", verModule(t, name, "v"))
	}
	// The good module is the largest file: smallest-first alone would load
	// it last.
	put(t, dir, "good.wasm", addCustomSection(verModule(t, "good", "good-1"), 4096))
	began := make(chan string, 64)
	pol := &Policy{Modules: map[string]ModulePolicy{"good": {}}}
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir, Policy: pol,
		wrapLoader: func(l plugins.Loader[*wasmrt.Module]) plugins.Loader[*wasmrt.Module] {
			return limitLoader{Loader: l, gates: gates, began: began}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The loaders start plugins.DefaultLoadWorkers loads at once, so the
	// order in which those report is the scheduler's: good must be among
	// them.
	var first []string
	for range plugins.DefaultLoadWorkers {
		first = append(first, <-began)
	}
	if !slices.Contains(first, "good") {
		t.Errorf("first loads %q, want good among them (named by the policy)", first)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	h := hosttest.NewHTTPClient(t, srv.URL+HTTPPath)
	h.HC = srv.Client()
	h.Initialize(nil)
	defer h.Close()

	close(gates["bad0"]) // one bad module hits its limit; three still load
	if got := listTools(t, h); !slices.Equal(got, []string{"good"}) {
		t.Errorf("tools/list at start = %v, want [good]", got)
	}
	if n := s.catalog.Load().gen.Loading(); n == 0 {
		t.Error("tools/list waited for every bad module")
	}
	for _, name := range []string{"bad1", "bad2", "bad3"} {
		close(gates[name])
	}
	await(s, func(c *catalog) bool { return c.gen.Loading() == 0 })
	if n := s.catalog.Load().gen.Limited(); n != 4 {
		t.Errorf("%d modules failed at a limit, want 4", n)
	}
	loads := len(began)
	before := scanSeq(s)
	put(t, dir, "other.wasm", verModule(t, "other", "o"))
	await(s, func(c *catalog) bool { return c.gen.Snapshot().Seq() > before && c.gen.Loading() == 0 })
	if n := len(began) - loads; n != 1 {
		t.Errorf("%d loads on the rescan, want 1 (other.wasm; the bad ones are remembered)", n)
	}
}

// TestStartWaitsWithoutLimits: with no module at a limit, tools/list at
// start still waits for every module found at start.
func TestStartWaitsWithoutLimits(t *testing.T) {
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
	await(s, func(c *catalog) bool { _, ok := c.tool("alpha"); return ok })
	select {
	case <-s.started:
		t.Fatal("the start ended while slow.wasm loads and nothing hit a limit")
	default:
	}
	close(gate)
	if got := s.Tools(); len(got) != 2 {
		t.Errorf("tools %v, want both", got)
	}
}

// addCustomSection appends a custom section of n bytes of payload, which
// makes a module larger without a change to what it does.
func addCustomSection(b []byte, n int) []byte {
	payload := append([]byte{1, 'x'}, make([]byte, n)...)
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}
