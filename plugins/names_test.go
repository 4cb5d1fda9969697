package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// builder builds generations one after another from snapshots given as
// module name → tool names, with one set of rules, on a fakeLoader.
type builder struct {
	t     *testing.T
	rules Rules
	fl    *fakeLoader
	gen   *Generation[*fakeCompiled]
}

func newBuilder(t *testing.T, rules Rules) *builder {
	return &builder{t: t, rules: rules, fl: &fakeLoader{}}
}

func (b *builder) build(mods map[string][]string) *Generation[*fakeCompiled] {
	b.t.Helper()
	next, released := Build(context.Background(), b.gen, snapOf(b.t, mods, nil), b.fl, b.rules)
	for _, c := range released {
		b.fl.Release(c)
	}
	b.gen = next
	return next
}

// conflictOf returns the ConflictError of module's problem, or fails.
func conflictOf(t *testing.T, g *Generation[*fakeCompiled], module string) *ConflictError {
	t.Helper()
	for _, p := range g.Problems() {
		var ce *ConflictError
		if p.Name == module && errors.As(p.Err, &ce) {
			if !errors.Is(p.Err, ErrToolConflict) {
				t.Errorf("%s: %v does not wrap ErrToolConflict", module, p.Err)
			}
			return ce
		}
	}
	t.Fatalf("no tool conflict of %s in %v", module, g.Problems())
	return nil
}

// TestNamesSameBatchEstablishedOwnerWins: a squatter that sorts first and
// arrives in the same batch as the owner's redeployed file does not get
// the owner's name, in each of the ways a redeploy reaches a Build.
func TestNamesSameBatchEstablishedOwnerWins(t *testing.T) {
	tests := []struct {
		name  string
		steps []map[string][]string // after the owner served {"real": beta}
	}{
		{"new version and squatter in one batch", []map[string][]string{
			{"a_squat": {"beta"}, "real": {"beta", "v2"}},
		}},
		{"removed, then copied back with the squatter", []map[string][]string{
			{},
			{"a_squat": {"beta"}, "real": {"beta"}},
		}},
		{"squatter while the owner was away, owner back", []map[string][]string{
			{"a_squat": {"beta"}},
			{"a_squat": {"beta"}, "real": {"beta"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t, Rules{NameGrace: time.Hour})
			b.build(map[string][]string{"real": {"beta"}})
			var g *Generation[*fakeCompiled]
			for _, s := range tt.steps {
				g = b.build(s)
				if l, _, ok := g.Tool("beta"); ok && l.Module.Name != "real" {
					t.Fatalf("beta served by %s after %v, want real or nobody", l.Module.Name, s)
				}
			}
			if l, _, ok := g.Tool("beta"); !ok || l.Module.Name != "real" {
				t.Fatalf("beta served by %v (%v), want real; problems %v", l.Module.Name, ok, g.Problems())
			}
			ce := conflictOf(t, g, "a_squat")
			if ce.Owner != "real" || ce.OwnerPath != "real.wasm" || ce.Tool != "beta" {
				t.Errorf("conflict %+v, want beta owned by real (real.wasm)", ce)
			}
		})
	}
}

// TestNamesGrace: a removed owner's names stay reserved for it for the
// grace period, so that it gets them back from a squatter that appeared
// meanwhile; after the grace, the name is free again.
func TestNamesGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBuilder(t, Rules{NameGrace: 10 * time.Minute})
		b.build(map[string][]string{"real": {"beta"}, "other": {"o"}})

		g := b.build(map[string][]string{"other": {"o"}}) // real removed
		removed := time.Now()
		if until, ok := g.ReservedUntil(); !ok || !until.Equal(removed.Add(10*time.Minute)) {
			t.Errorf("ReservedUntil = %v, %v; want %v", until, ok, removed.Add(10*time.Minute))
		}

		time.Sleep(time.Minute)
		g = b.build(map[string][]string{"other": {"o"}, "a_squat": {"beta", "s"}})
		if served(g, "beta") || served(g, "s") {
			t.Fatalf("squatter served while beta is reserved; problems %v", g.Problems())
		}
		ce := conflictOf(t, g, "a_squat")
		want := &ConflictError{Tool: "beta", Owner: "real", OwnerPath: "real.wasm", Why: ConflictReserved, Until: removed.Add(10 * time.Minute)}
		if diff := cmp.Diff(want, ce); diff != "" {
			t.Errorf("conflict (-want +got):\n%s", diff)
		}
		if msg := ce.Error(); !strings.Contains(msg, "real.wasm") || !strings.Contains(msg, removed.Add(10*time.Minute).UTC().Format(time.RFC3339)) {
			t.Errorf("message %q names neither the owner's file nor the end of the reservation", msg)
		}

		time.Sleep(8 * time.Minute) // 9 minutes after the removal
		g = b.build(map[string][]string{"other": {"o"}, "a_squat": {"beta", "s"}, "real": {"beta"}})
		if l, _, ok := g.Tool("beta"); !ok || l.Module.Name != "real" {
			t.Fatalf("beta after the owner came back within the grace: %v, %v; problems %v", l.Module.Name, ok, g.Problems())
		}
		if ce := conflictOf(t, g, "a_squat"); ce.Why != ConflictServed || ce.OwnerPath != "real.wasm" {
			t.Errorf("conflict once the owner serves again: %+v", ce)
		}
		if _, ok := g.ReservedUntil(); ok {
			t.Error("a reservation remains once its owner serves again")
		}

		// Removed again: reserved again from this removal; free once the
		// grace has passed.
		g = b.build(map[string][]string{"other": {"o"}, "a_squat": {"beta", "s"}})
		until, _ := g.ReservedUntil()
		time.Sleep(time.Until(until) - time.Nanosecond)
		if g = b.build(map[string][]string{"other": {"o"}, "a_squat": {"beta", "s"}}); served(g, "beta") {
			t.Fatal("squatter served beta before the grace ended")
		}
		time.Sleep(time.Nanosecond)
		if g = b.build(map[string][]string{"other": {"o"}, "a_squat": {"beta", "s"}}); !served(g, "beta") {
			t.Fatalf("beta not served once the grace ended; problems %v", g.Problems())
		}
		if _, ok := g.ReservedUntil(); ok {
			t.Error("an expired reservation is still reported")
		}
	})
}

// TestNamesHeldWhileOwnerPresent: while the owner's file is in the
// directory its names are its own even when no version of it serves (it
// was removed and came back broken, or its new version is refused): a
// squatter gets nothing, whatever the grace.
func TestNamesHeldWhileOwnerPresent(t *testing.T) {
	b := newBuilder(t, Rules{}) // no grace at all
	b.build(map[string][]string{"real": {"beta"}})
	// The owner's new version conflicts on a name bound elsewhere: it is
	// refused, and its old names stay its own.
	b.rules.Bind = map[string]string{"gamma": "z"}
	g := b.build(map[string][]string{"real": {"beta", "gamma"}, "a_squat": {"beta"}})
	if served(g, "beta") {
		t.Fatalf("beta served while its owner's file is there; problems %v", g.Problems())
	}
	if ce := conflictOf(t, g, "a_squat"); ce.Owner != "real" || ce.Why != ConflictHeld || ce.OwnerPath != "real.wasm" {
		t.Errorf("squatter's conflict %+v, want held by real (real.wasm)", ce)
	}
	if ce := conflictOf(t, g, "real"); ce.Owner != "z" || ce.Why != ConflictBound {
		t.Errorf("owner's conflict %+v, want gamma bound to z", ce)
	}
	// Fixed: it serves again.
	g = b.build(map[string][]string{"real": {"beta"}, "a_squat": {"beta"}})
	if l, _, ok := g.Tool("beta"); !ok || l.Module.Name != "real" {
		t.Errorf("beta after the owner's fix: %v %v; problems %v", l.Module.Name, ok, g.Problems())
	}
}

// TestNamesDroppedNameIsFree: a name the owner's new version no longer
// declares is free in the same Build.
func TestNamesDroppedNameIsFree(t *testing.T) {
	b := newBuilder(t, Rules{NameGrace: time.Hour})
	b.build(map[string][]string{"real": {"beta", "keep"}})
	g := b.build(map[string][]string{"real": {"keep"}, "a_new": {"beta"}})
	if l, _, ok := g.Tool("beta"); !ok || l.Module.Name != "a_new" {
		t.Errorf("beta dropped by its owner: served by %v %v, want a_new; problems %v", l.Module.Name, ok, g.Problems())
	}
}

// TestNamesBound: a name the rules bind goes to its module whatever the
// order, whoever served it before, and is not served while that module is
// missing.
func TestNamesBound(t *testing.T) {
	for _, squatter := range []string{"a_squat", "z_squat"} { // sorts before and after
		t.Run(squatter, func(t *testing.T) {
			b := newBuilder(t, Rules{})
			// The squatter came first and served beta.
			if g := b.build(map[string][]string{squatter: {"beta"}}); !served(g, "beta") {
				t.Fatal("beta not served before any binding")
			}
			b.rules.Bind = map[string]string{"beta": "real"}
			g := b.build(map[string][]string{squatter: {"beta"}})
			if served(g, "beta") {
				t.Fatal("beta served by the squatter once bound to a module that is missing")
			}
			if ce := conflictOf(t, g, squatter); ce.Owner != "real" || ce.OwnerPath != "" || ce.Why != ConflictBound ||
				!strings.Contains(ce.Error(), "not in the directory") {
				t.Errorf("conflict %+v (%v), want bound to real, whose file is missing", ce, ce)
			}
			g = b.build(map[string][]string{squatter: {"beta"}, "real": {"beta"}})
			if l, _, ok := g.Tool("beta"); !ok || l.Module.Name != "real" {
				t.Fatalf("beta: %v %v, want real; problems %v", l.Module.Name, ok, g.Problems())
			}
			if ce := conflictOf(t, g, squatter); ce.OwnerPath != "real.wasm" {
				t.Errorf("conflict %+v, want the owner's file named", ce)
			}
		})
	}
}

// TestNamesFirstStartByName: with no history and no binding, two new
// modules that declare one name are decided by file name, and the
// problem names both files.
func TestNamesFirstStartByName(t *testing.T) {
	b := newBuilder(t, Rules{NameGrace: time.Hour})
	g := b.build(map[string][]string{"b": {"x"}, "a": {"x"}})
	if l, _, _ := g.Tool("x"); l.Module.Name != "a" {
		t.Errorf("x served by %q, want a", l.Module.Name)
	}
	ce := conflictOf(t, g, "b")
	if ce.Why != ConflictDeclared || ce.OwnerPath != "a.wasm" {
		t.Errorf("conflict %+v", ce)
	}
	want := `tool name declared by two modules: tool "x" is already declared by module "a" (a.wasm), first in file-name order`
	if got := ce.Error(); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestNamesReservationsBounded: reservations of removed files are bounded;
// past the bound the most recent owners lose theirs first, so a flood of
// short-lived modules does not push out an owner that served for long.
func TestNamesReservationsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBuilder(t, Rules{NameGrace: time.Hour})
		wave := func(prefix string, n int, extra map[string][]string) map[string][]string {
			m := map[string][]string{}
			for i := range n {
				name := fmt.Sprintf("%s%04d", prefix, i)
				m[name] = []string{name}
			}
			for k, v := range extra {
				m[k] = v
			}
			return m
		}
		b.build(map[string][]string{"real": {"beta"}})
		time.Sleep(time.Minute)
		b.build(wave("f", 700, map[string][]string{"real": {"beta"}}))
		time.Sleep(time.Minute)
		b.build(map[string][]string{}) // 701 removed
		time.Sleep(time.Minute)
		b.build(wave("g", 700, nil))
		time.Sleep(time.Minute)
		g := b.build(map[string][]string{"a_squat": {"beta"}}) // 1401 removed in all
		gone := 0
		for _, c := range g.claims {
			if !c.gone.IsZero() {
				gone++
			}
		}
		if gone != maxGoneClaims {
			t.Errorf("%d reservations kept, want the bound %d", gone, maxGoneClaims)
		}
		if served(g, "beta") {
			t.Error("the oldest owner's reservation was pushed out by newer ones")
		}
		if _, ok := g.claims["g0699"]; ok {
			t.Error("a reservation of the newest wave kept while the bound was passed")
		}
	})
}

// TestNamesRenameWaitsForTheGrace: for its names, a renamed file is a
// removal and an addition: the new name gets them once the grace has
// passed, or at once when the rules bind them to it. Meanwhile neither a
// copy nor the rename can take them from the original file, which gets
// them back when it returns.
func TestNamesRenameWaitsForTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		rules := Rules{NameGrace: time.Hour}
		fl := &fakeLoader{}
		var gen *Generation[*fakeCompiled]
		build := func() *Generation[*fakeCompiled] {
			t.Helper()
			snap, err := Scan(context.Background(), Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			gen, _ = Build(context.Background(), gen, snap, fl, rules)
			return gen
		}
		path := func(name string) string { return filepath.Join(dir, name+".wasm") }
		writeFile(t, path("a"), manifest("y"))
		build()

		if err := os.Rename(path("a"), path("c")); err != nil {
			t.Fatal(err)
		}
		g := build()
		if served(g, "y") {
			t.Fatal("the renamed file took the name at once")
		}
		if ce := conflictOf(t, g, "c"); ce.Owner != "a" || ce.Why != ConflictReserved || ce.OwnerPath != path("a") {
			t.Errorf("conflict %+v, want y reserved for a (%s)", ce, path("a"))
		}
		rules.Bind = map[string]string{"y": "c"}
		if g := build(); !servedBy(g, "y", "c") {
			t.Fatalf("y bound to c: problems %v", g.Problems())
		}
		rules.Bind = nil
		if g := build(); !servedBy(g, "y", "c") {
			t.Fatalf("y once the binding is gone: c serves it now; problems %v", g.Problems())
		}
		if err := os.Rename(path("c"), path("a")); err != nil {
			t.Fatal(err)
		}
		if g := build(); served(g, "y") {
			t.Fatal("renamed back: a took y while it is reserved for c")
		}
		time.Sleep(time.Hour)
		if g := build(); !servedBy(g, "y", "a") {
			t.Errorf("y after the grace: problems %v", g.Problems())
		}
	})
}

func servedBy(g *Generation[*fakeCompiled], tool, module string) bool {
	l, _, ok := g.Tool(tool)
	return ok && l.Module.Name == module
}
