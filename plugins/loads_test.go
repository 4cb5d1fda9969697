package plugins

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

// gatedLoader loads like fakeLoader, but a module whose name starts with
// "slow" blocks until its gate is opened or its context ends, a module
// whose name starts with "stuck" blocks until its context ends, one
// whose name starts with "deaf" blocks until its gate is opened, and one
// whose name starts with "limit" fails as a describe past its time limit
// does (an error wrapping context.DeadlineExceeded) after its gate is
// opened when it has one. It counts what it does, safely across the
// workers of a Loads.
type gatedLoader struct {
	mu       sync.Mutex
	gates    map[string]chan struct{}
	loads    []string // module names, in the order loads began
	running  int
	peak     int // most loads running at once
	released int
}

func newGatedLoader() *gatedLoader { return &gatedLoader{gates: map[string]chan struct{}{}} }

func (g *gatedLoader) gate(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[name] == nil {
		g.gates[name] = make(chan struct{})
	}
	return g.gates[name]
}

func (g *gatedLoader) Load(ctx context.Context, m Module, wasm []byte) (*fakeCompiled, *abi.Manifest, error) {
	g.mu.Lock()
	g.loads = append(g.loads, m.Name)
	g.running++
	g.peak = max(g.peak, g.running)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running--
		g.mu.Unlock()
	}()
	switch {
	case strings.HasPrefix(m.Name, "slow"):
		select {
		case <-g.gate(m.Name):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	case strings.HasPrefix(m.Name, "stuck"):
		<-ctx.Done()
		return nil, nil, ctx.Err()
	case strings.HasPrefix(m.Name, "deaf"):
		<-g.gate(m.Name) // ignores its context, as a compile may
	case strings.HasPrefix(m.Name, "limit"):
		g.mu.Lock()
		gate := g.gates[m.Name]
		g.mu.Unlock()
		if gate != nil {
			<-gate
		}
		return nil, nil, fmt.Errorf("describe: %w", context.DeadlineExceeded)
	}
	man, err := abi.DecodeManifest(wasm)
	if err != nil {
		return nil, nil, err
	}
	return &fakeCompiled{digest: m.Digest}, man, nil
}

func (g *gatedLoader) Release(c *fakeCompiled) {
	if c != nil {
		g.mu.Lock()
		g.released++
		g.mu.Unlock()
	}
}

func (g *gatedLoader) stats() (loads []string, peak, released int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.loads...), g.peak, g.released
}

// snapOf scans modules given as name → tool names (one manifest each);
// pad makes a file larger by that many spaces.
func snapOf(t testing.TB, mods map[string][]string, pad map[string]int) *Snapshot {
	t.Helper()
	return snapFrom(t, "", mods, pad)
}

// snapFrom is snapOf for the source called source.
func snapFrom(t testing.TB, source string, mods map[string][]string, pad map[string]int) *Snapshot {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, tools := range mods {
		fsys[name+".wasm"] = &fstest.MapFile{Data: []byte(manifest(tools...) + strings.Repeat(" ", pad[name]))}
	}
	snap, err := ScanFS(fsys, Config{Source: source})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// buildUntil builds from snap each time a load finishes until cond holds
// for the generation, and returns it. The generations in between are
// chained, as the host chains them.
func buildUntil(t *testing.T, prev *Generation[*fakeCompiled], snap *Snapshot, p *Loads[*fakeCompiled], cond func(*Generation[*fakeCompiled]) bool) *Generation[*fakeCompiled] {
	t.Helper()
	for {
		g, _ := Build(context.Background(), prev, snap, p, Rules{})
		if cond(g) {
			return g
		}
		prev = g
		<-p.Finished()
	}
}

func served(g *Generation[*fakeCompiled], tool string) bool { _, _, ok := g.Tool(tool); return ok }

// TestLoadsSlowModuleDelaysOnlyItself: a module that takes long to load
// does not keep a quick one from being served, is reported as loading
// meanwhile, and is served once it has loaded.
func TestLoadsSlowModuleDelaysOnlyItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 2, Timeout: time.Hour})
		defer p.Close()
		snap := snapOf(t, map[string][]string{"quick": {"a"}, "slow": {"b"}}, nil)

		first, _ := Build(context.Background(), nil, snap, p, Rules{})
		if first.Loading() != 2 || len(first.Modules()) != 0 {
			t.Fatalf("first build: %d loading, %d modules; want 2 and 0", first.Loading(), len(first.Modules()))
		}
		gen := buildUntil(t, first, snap, p, func(g *Generation[*fakeCompiled]) bool { return served(g, "a") })
		if served(gen, "b") || gen.Loading() != 1 {
			t.Fatalf("while slow loads: b served %v, %d loading; want false and 1", served(gen, "b"), gen.Loading())
		}
		if ps := gen.Problems(); len(ps) != 1 || ps[0].Name != "slow" || !errors.Is(ps[0].Err, ErrLoading) {
			t.Errorf("problems while slow loads: %v, want slow: ErrLoading", ps)
		}

		close(g.gate("slow"))
		gen = buildUntil(t, gen, snap, p, func(g *Generation[*fakeCompiled]) bool { return g.Loading() == 0 })
		if !served(gen, "a") || !served(gen, "b") || len(gen.Problems()) != 0 {
			t.Errorf("after slow loaded: a %v, b %v, problems %v; want both served, none", served(gen, "a"), served(gen, "b"), gen.Problems())
		}
		if loads, _, _ := g.stats(); len(loads) != 2 {
			t.Errorf("loads %v, want each module once", loads)
		}
	})
}

// TestLoadsTimeout: a load that passes the timeout is a problem wrapping
// ErrLoadTimeout, remembered against the digest (not loaded again), while
// a module with other content loads.
func TestLoadsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 1, Timeout: 10 * time.Second})
		defer p.Close()
		snap := snapOf(t, map[string][]string{"stuck": {"a"}}, nil)
		gen := buildUntil(t, nil, snap, p, func(g *Generation[*fakeCompiled]) bool { return g.Loading() == 0 })
		ps := gen.Problems()
		if len(ps) != 1 || !errors.Is(ps[0].Err, ErrLoadTimeout) || !strings.Contains(ps[0].Err.Error(), "10s") {
			t.Fatalf("problems %v, want stuck: ErrLoadTimeout naming 10s", ps)
		}
		// The failure is remembered: building again does not load again.
		again, _ := Build(context.Background(), gen, snap, p, Rules{})
		if again.Loading() != 0 || !errors.Is(again.Problems()[0].Err, ErrLoadTimeout) {
			t.Errorf("rebuild: %d loading, problems %v", again.Loading(), again.Problems())
		}
		// A quick module added later still loads in the single worker.
		snap2 := snapOf(t, map[string][]string{"stuck": {"a"}, "quick": {"b"}}, nil)
		gen = buildUntil(t, again, snap2, p, func(g *Generation[*fakeCompiled]) bool { return served(g, "b") })
		if ps := gen.Problems(); len(ps) != 1 || !errors.Is(ps[0].Err, ErrLoadTimeout) {
			t.Errorf("after adding quick: problems %v, want stuck still timed out", ps)
		}
		if loads, _, _ := g.stats(); len(loads) != 2 {
			t.Errorf("loads %v, want stuck once and quick once", loads)
		}
	})
}

// TestLoadsBoundedAndSmallestFirst: at most Workers loads run at once, and
// queued modules are taken smallest file first, so a small module never
// waits behind larger ones queued with it.
func TestLoadsBoundedAndSmallestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 1, Timeout: time.Hour})
		defer p.Close()
		// slow_first holds the only worker while the others are queued.
		Build(context.Background(), nil, snapOf(t, map[string][]string{"slow_first": {"z"}}, nil), p, Rules{})
		synctest.Wait()
		snap := snapOf(t, map[string][]string{"slow_first": {"z"}, "slow_big": {"a"}, "slow_mid": {"b"}, "tiny": {"c"}, "slow_huge": {"d"}},
			map[string]int{"slow_big": 2000, "slow_mid": 1000, "slow_huge": 3000})
		first, _ := Build(context.Background(), nil, snap, p, Rules{})
		close(g.gate("slow_first"))
		gen := buildUntil(t, first, snap, p, func(g *Generation[*fakeCompiled]) bool { return served(g, "c") })
		for _, name := range []string{"slow_mid", "slow_big", "slow_huge"} {
			close(g.gate(name))
		}
		buildUntil(t, gen, snap, p, func(g *Generation[*fakeCompiled]) bool { return g.Loading() == 0 })
		loads, peak, _ := g.stats()
		if want := []string{"slow_first", "tiny", "slow_mid", "slow_big", "slow_huge"}; strings.Join(loads, " ") != strings.Join(want, " ") {
			t.Errorf("load order %v, want %v", loads, want)
		}
		if peak != 1 {
			t.Errorf("%d loads ran at once, want at most 1", peak)
		}
	})
}

// TestLoadsKeepAndClose: a module removed while it loads is cancelled and
// its result released; Close releases what no Build took, and its workers
// are gone when it returns (the bubble would not end otherwise).
func TestLoadsKeepAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 2, Timeout: time.Hour})
		snap := snapOf(t, map[string][]string{"slow": {"a"}, "quick": {"b"}}, nil)
		Build(context.Background(), nil, snap, p, Rules{})
		synctest.Wait() // both running or done
		p.Keep(snapOf(t, map[string][]string{}, nil))
		synctest.Wait()
		if n := p.Loading(); n != 0 {
			t.Errorf("%d loads after Keep of an empty snapshot, want 0", n)
		}
		_, _, released := g.stats()
		if released != 1 { // quick had loaded; slow was cancelled and returned nothing
			t.Errorf("released %d, want 1", released)
		}

		snap = snapOf(t, map[string][]string{"other": {"c"}}, nil)
		Build(context.Background(), nil, snap, p, Rules{})
		synctest.Wait()
		p.Close()
		if _, _, released := g.stats(); released != 2 {
			t.Errorf("released %d after Close, want 2", released)
		}
		if _, err := p.take(snap.Modules()[0], false); errors.Is(err, ErrLoading) || err == nil {
			t.Errorf("take after Close: %v, want a failure that is not ErrLoading", err)
		}
	})
}

// TestLoadsDroppedJobLeavesItsSuccessor: a load that Keep dropped while it
// ran, and that a later Build queued again, finishes after the new job
// started; the new job stays the digest's, and its result is taken.
func TestLoadsDroppedJobLeavesItsSuccessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 2, Timeout: time.Hour})
		defer p.Close()
		snap := snapOf(t, map[string][]string{"deaf": {"a"}}, nil)
		Build(context.Background(), nil, snap, p, Rules{})
		synctest.Wait() // running, deaf to the cancel that follows
		p.Keep(snapOf(t, map[string][]string{}, nil))
		Build(context.Background(), nil, snap, p, Rules{})
		synctest.Wait() // the same digest loading again, on the other worker
		close(g.gate("deaf"))
		synctest.Wait()
		if _, err := p.take(snap.Modules()[0], false); err != nil {
			t.Fatalf("take after both loads ended: %v, want the second load's result", err)
		}
		if loads, _, released := g.stats(); len(loads) != 2 || released != 1 {
			t.Errorf("loads %v, released %d; want two loads and the dropped one released", loads, released)
		}
	})
}
