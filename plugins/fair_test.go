package plugins

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// slowMods returns n modules called prefix0, prefix1, …, one tool each.
func slowMods(prefix string, n int) map[string][]string {
	m := map[string][]string{}
	for i := range n {
		name := fmt.Sprintf("%s%d", prefix, i)
		m[name] = []string{name}
	}
	return m
}

// startedBefore counts the loads of names starting with prefix that
// began before the load of module.
func startedBefore(loads []string, prefix, module string) int {
	i := slices.Index(loads, module)
	if i < 0 {
		return -1
	}
	n := 0
	for _, l := range loads[:i] {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// TestLoadsFairAcrossSources: source A's slow modules hold every slot;
// source B's module, queued after them, starts as soon as one slot frees:
// no more of A's loads start before it than there are slots. And B's
// result is taken while A's other modules still load.
func TestLoadsFairAcrossSources(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d slots", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGatedLoader()
				p := NewLoads(g, LoadConfig{Workers: workers, Timeout: time.Hour})
				defer p.Close()
				snapA := snapFrom(t, "A", slowMods("slow_a", 32), nil)
				genA, _ := Build(context.Background(), nil, snapA, p, Rules{})
				synctest.Wait() // A's loads hold every slot
				snapB := snapFrom(t, "B", map[string][]string{"good": {"g"}}, nil)
				genB, _ := Build(context.Background(), nil, snapB, p, Rules{})
				if genA.Loading() != 32 || genB.Loading() != 1 {
					t.Fatalf("loading: A %d, B %d; want 32 and 1", genA.Loading(), genB.Loading())
				}
				close(g.gate("slow_a0")) // one slot frees
				buildUntil(t, genB, snapB, p, func(g *Generation[*fakeCompiled]) bool { return served(g, "g") })
				loads, _, _ := g.stats()
				if n := startedBefore(loads, "slow_a", "good"); n < 0 || n > workers {
					t.Errorf("%d of A's loads started before B's, want at most %d (the slots); loads %v", n, workers, loads)
				}
				if n := p.Loading(); n != 31 {
					t.Errorf("%d loads queued or running once B's module served, want A's other 31", n)
				}
			})
		})
	}
}

// TestLoadsRoundRobin: sources with queued modules take turns for one
// slot, and a source that runs more loads waits for those that run fewer.
func TestLoadsRoundRobin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 1, Timeout: time.Hour})
		defer p.Close()
		Build(context.Background(), nil, snapFrom(t, "A", slowMods("slow_a", 3), nil), p, Rules{})
		Build(context.Background(), nil, snapFrom(t, "B", slowMods("slow_b", 3), nil), p, Rules{})
		Build(context.Background(), nil, snapFrom(t, "C", slowMods("slow_c", 1), nil), p, Rules{})
		for range 7 {
			synctest.Wait()
			loads, _, _ := g.stats()
			close(g.gate(loads[len(loads)-1]))
		}
		synctest.Wait()
		loads, peak, _ := g.stats()
		want := []string{"slow_a0", "slow_b0", "slow_c0", "slow_a1", "slow_b1", "slow_a2", "slow_b2"}
		if !slices.Equal(loads, want) {
			t.Errorf("load order %v, want %v", loads, want)
		}
		if peak != 1 {
			t.Errorf("%d loads at once, want 1", peak)
		}
	})
}

// TestLoadsKeepIsPerSource: Keep of one source's snapshot forgets nothing
// of another source's.
func TestLoadsKeepIsPerSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 1, Timeout: time.Hour})
		defer p.Close()
		Build(context.Background(), nil, snapFrom(t, "A", slowMods("slow_a", 2), nil), p, Rules{})
		Build(context.Background(), nil, snapFrom(t, "B", slowMods("slow_b", 2), nil), p, Rules{})
		synctest.Wait()
		p.Keep(snapFrom(t, "A", nil, nil)) // A is emptied
		synctest.Wait()
		if n := p.Loading(); n != 2 {
			t.Errorf("%d loads after A was emptied, want B's 2", n)
		}
	})
}

// TestLoadsFailedContentNotRetried: a module that failed at a limit is
// not loaded again while its content stays the same — on a rebuild, after
// its file was removed and put back, under another name — and is loaded
// again once its content changes.
func TestLoadsFailedContentNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 2, Timeout: time.Hour})
		defer p.Close()
		done := func(g *Generation[*fakeCompiled]) bool { return g.Loading() == 0 }
		mods := map[string][]string{"limit_x": {"x"}, "good": {"g"}}
		gen := buildUntil(t, nil, snapOf(t, mods, nil), p, done)
		if gen.Limited() != 1 || !served(gen, "g") {
			t.Fatalf("limited %d, g served %v; want 1 and true", gen.Limited(), served(gen, "g"))
		}
		describes := func() int {
			loads, _, _ := g.stats()
			n := 0
			for _, l := range loads {
				if strings.HasPrefix(l, "limit") {
					n++
				}
			}
			return n
		}
		steps := []struct {
			name string
			mods map[string][]string
			pad  map[string]int
			want int // describe runs of limit modules so far
		}{
			{"rescan", mods, nil, 1},
			{"removed", map[string][]string{"good": {"g"}}, nil, 1},
			{"put back", mods, nil, 1},
			{"renamed", map[string][]string{"limit_y": {"x"}, "good": {"g"}}, nil, 1},
			{"content changed", map[string][]string{"limit_y": {"x"}, "good": {"g"}}, map[string]int{"limit_y": 1}, 2},
		}
		for _, st := range steps {
			snap := snapOf(t, st.mods, st.pad)
			gen = buildUntil(t, gen, snap, p, done)
			p.Keep(snap)
			synctest.Wait()
			if got := describes(); got != st.want {
				t.Errorf("%s: %d describe runs, want %d", st.name, got, st.want)
			}
			if _, ok := st.mods["good"]; ok && !served(gen, "g") {
				t.Errorf("%s: the good module is not served", st.name)
			}
		}
		if ps := gen.Problems(); len(ps) != 1 || !errors.Is(ps[0].Err, context.DeadlineExceeded) {
			t.Errorf("problems %v, want the limit failure", ps)
		}
	})
}

// TestLoadsFailedBounded: the memory of failed contents is bounded; a
// content forgotten is loaded again.
func TestLoadsFailedBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 1, Timeout: time.Hour, MaxFailed: 2})
		defer p.Close()
		done := func(g *Generation[*fakeCompiled]) bool { return g.Loading() == 0 }
		for _, name := range []string{"limit_a", "limit_b", "limit_c", "limit_a", "limit_c"} {
			snap := snapOf(t, map[string][]string{name: {name}}, nil)
			buildUntil(t, nil, snap, p, done)
		}
		loads, _, _ := g.stats()
		// limit_a was pushed out by limit_c and loads again; limit_c is
		// remembered.
		if want := []string{"limit_a", "limit_b", "limit_c", "limit_a"}; !slices.Equal(loads, want) {
			t.Errorf("loads %v, want %v", loads, want)
		}
	})
}

// TestLoadsWithinSourceOrder: within a source, modules the rules know go
// first, then those that never failed, each smallest first.
func TestLoadsWithinSourceOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		p := NewLoads(g, LoadConfig{Workers: 1, Timeout: time.Hour})
		defer p.Close()
		done := func(g *Generation[*fakeCompiled]) bool { return g.Loading() == 0 }
		// limit_r fails once: its module has failed before.
		gen := buildUntil(t, nil, snapOf(t, map[string][]string{"limit_r": {"r"}}, nil), p, done)
		// slow_first holds the slot while the rest queue.
		mods := map[string][]string{"slow_first": {"z"}, "limit_r": {"r"}, "tiny": {"t"}, "known_big": {"k"}, "mid": {"m"}}
		snap := snapOf(t, mods, map[string]int{"limit_r": 1, "known_big": 5000, "mid": 100})
		rules := Rules{Known: map[string]bool{"known_big": true}}
		Build(context.Background(), gen, snapOf(t, map[string][]string{"slow_first": {"z"}}, nil), p, rules)
		synctest.Wait()
		gen, _ = Build(context.Background(), gen, snap, p, rules)
		if gen.LoadingKnown() != 1 {
			t.Errorf("LoadingKnown = %d, want 1", gen.LoadingKnown())
		}
		close(g.gate("slow_first"))
		buildUntil(t, gen, snap, p, done)
		loads, _, _ := g.stats()
		if want := []string{"limit_r", "slow_first", "known_big", "tiny", "mid", "limit_r"}; !slices.Equal(loads, want) {
			t.Errorf("load order %v, want %v", loads, want)
		}
	})
}
