package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/wasmtask/wasmtask/plugins"
)

// Tool names stay with the module the operator meant: across a redeploy
// (the file removed, then copied back), against a file that sorts first in
// the same batch, and by the policy's toolNames whatever the order.

// fsServer is a server on a fixed set of modules that the test then
// reloads by hand, one exact batch (snapshot) at a time.
type fsServer struct {
	t *testing.T
	s *Server
}

func newFSServer(t *testing.T, pol *Policy, files map[string][]byte) *fsServer {
	t.Helper()
	s, err := New(context.Background(), Config{ToolsFS: mapFS(files), Policy: pol, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_ = s.ready(context.Background(), "")
	f := &fsServer{t, s}
	f.settle(s.catalog.Load().gen.Snapshot())
	return f
}

func mapFS(files map[string][]byte) fstest.MapFS {
	m := fstest.MapFS{}
	for name, b := range files {
		m[name] = &fstest.MapFile{Data: b}
	}
	return m
}

// batch reloads the server with exactly these files, as one snapshot, and
// returns the catalog once every module of it has loaded or failed.
func (f *fsServer) batch(files map[string][]byte) *catalog {
	f.t.Helper()
	snap, err := plugins.ScanFS(mapFS(files), plugins.Config{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.s.reload(context.Background(), snap)
	return f.settle(snap)
}

func (f *fsServer) settle(snap *plugins.Snapshot) *catalog {
	if err := f.s.awaitCatalog(context.Background(), func(c *catalog) bool { return c.gen.Snapshot() == snap && c.gen.Loading() == 0 }); err != nil {
		f.t.Fatal(err)
	}
	return f.s.catalog.Load()
}

// servedFrom returns the module serving tool in c, "" for none.
func servedFrom(c *catalog, tool string) string {
	if st, ok := c.tool(tool); ok {
		return st.module.Name
	}
	return ""
}

// conflictProblem returns the tool-name conflict reported for the file
// called file in c, or nil.
func conflictProblem(c *catalog, file string) (*plugins.ConflictError, Problem) {
	for _, p := range c.problems {
		var ce *plugins.ConflictError
		if filepath.Base(p.Path) == file && errors.As(p.Err, &ce) {
			return ce, p
		}
	}
	return nil, Problem{}
}

// TestNamesSameBatchSquatterLoses: a file that declares the name of an
// established module and sorts first never gets it by arriving in the same
// batch as the owner's file: not when the owner's new version comes with
// it, not when the owner's file comes back after a removal.
func TestNamesSameBatchSquatterLoses(t *testing.T) {
	real1, real2 := verModule(t, "beta", "real-1"), verModule(t, "beta", "real-2")
	squat := verModule(t, "beta", "squatter")
	t.Run("new version", func(t *testing.T) {
		f := newFSServer(t, nil, map[string][]byte{"real.wasm": real1})
		c := f.batch(map[string][]byte{"a_squat.wasm": squat, "real.wasm": real2})
		if got := servedFrom(c, "beta"); got != "real" || c.tools["beta"].module.Digest != digest(real2) {
			t.Errorf("beta served from %q, want real's new version; problems %v", got, c.problems)
		}
		if ce, _ := conflictProblem(c, "a_squat.wasm"); ce == nil || ce.Owner != "real" {
			t.Errorf("squatter's conflict %+v, want one naming real; problems %v", ce, c.problems)
		}
	})
	t.Run("removed, then back with the squatter", func(t *testing.T) {
		f := newFSServer(t, nil, map[string][]byte{"real.wasm": real1})
		if c := f.batch(map[string][]byte{}); servedFrom(c, "beta") != "" {
			t.Fatal("beta served with no file")
		}
		c := f.batch(map[string][]byte{"a_squat.wasm": squat, "real.wasm": real1})
		if got := servedFrom(c, "beta"); got != "real" {
			t.Errorf("beta served from %q, want real; problems %v", got, c.problems)
		}
		got, err := f.s.Call(context.Background(), "beta", nil, nil)
		if err != nil || len(got.Content) == 0 || got.Content[0].Text != "real-1" {
			t.Errorf("call beta = %v, %v; want real-1", got, err)
		}
	})
}

// TestNamesRedeployWithinGrace: the owner's file is removed, a squatter
// declaring its name appears meanwhile and is refused, and the owner's
// file copied back gets the name again — through the watched directory,
// with the refusal in Problems and the log naming both files.
func TestNamesRedeployWithinGrace(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "real.wasm", verModule(t, "beta", "real-1"))
	put(t, dir, "other.wasm", verModule(t, "omega", "omega-1"))
	s, logs := newReloadServer(t, Config{ToolsDir: dir})
	await(s, serves("beta", "omega"))

	remove(t, dir, "real.wasm")
	await(s, serves("omega"))
	if until, ok := s.catalog.Load().gen.ReservedUntil(); !ok || time.Until(until) <= 0 {
		t.Fatalf("ReservedUntil = %v, %v; want a time to come", until, ok)
	}

	put(t, dir, "a_squat.wasm", verModule(t, "beta", "squatter"))
	await(s, func(c *catalog) bool { ce, _ := conflictProblem(c, "a_squat.wasm"); return ce != nil })
	c := s.catalog.Load()
	if got := servedFrom(c, "beta"); got != "" {
		t.Fatalf("beta served from %q while reserved for real", got)
	}
	ce, p := conflictProblem(c, "a_squat.wasm")
	realPath := filepath.Join(dir, "real.wasm")
	if ce.Owner != "real" || ce.Why != plugins.ConflictReserved || filepath.Base(ce.OwnerPath) != "real.wasm" {
		t.Errorf("conflict %+v, want beta reserved for real (real.wasm)", ce)
	}
	if text := p.String(); !strings.Contains(text, "a_squat.wasm") || !strings.Contains(text, "real.wasm") {
		t.Errorf("problem %q does not name both files", text)
	}
	logs.await("tool problem", "a_squat.wasm", "ownerFile=", "real.wasm", "why=reserved")

	put(t, dir, "real.wasm", verModule(t, "beta", "real-2"))
	await(s, func(c *catalog) bool { return servedFrom(c, "beta") == "real" })
	if got := answer(t, newClient(t, s).Call("tools/call", map[string]any{"name": "beta", "arguments": map[string]any{}})); got != "real-2" {
		t.Errorf("beta answers %q, want real-2", got)
	}
	ce, _ = conflictProblem(s.catalog.Load(), "a_squat.wasm")
	if ce == nil || ce.Why != plugins.ConflictServed || filepath.Clean(ce.OwnerPath) != filepath.Clean(realPath) {
		t.Errorf("squatter's conflict once real serves: %+v, want served by %s", ce, realPath)
	}
	logs.await("tool problem", "a_squat.wasm", "ownerFile=", "real.wasm", "why=served")
}

// TestNamesGraceEnds: once the grace has passed with the owner's file
// still gone, the server rebuilds by itself and the other file that
// declares the name serves it. The server's clock is synctest's.
func TestNamesGraceEnds(t *testing.T) {
	real1, squat := verModule(t, "beta", "real-1"), verModule(t, "beta", "squatter")
	synctest.Test(t, func(t *testing.T) {
		f := newFSServer(t, &Policy{NameGrace: Duration(5 * time.Minute)}, map[string][]byte{"real.wasm": real1})
		removed := time.Now()
		c := f.batch(map[string][]byte{"a_squat.wasm": squat})
		if got := servedFrom(c, "beta"); got != "" {
			t.Fatalf("beta served from %q right after the removal", got)
		}
		if until, ok := c.gen.ReservedUntil(); !ok || !until.Equal(removed.Add(5*time.Minute)) {
			t.Fatalf("ReservedUntil = %v, %v; want %v", until, ok, removed.Add(5*time.Minute))
		}
		time.Sleep(5*time.Minute - time.Second)
		synctest.Wait()
		if got := servedFrom(f.s.catalog.Load(), "beta"); got != "" {
			t.Fatalf("beta served from %q before the grace ended", got)
		}
		time.Sleep(time.Second)
		await(f.s, func(c *catalog) bool { return servedFrom(c, "beta") == "a_squat" })
		if _, ok := f.s.catalog.Load().gen.ReservedUntil(); ok {
			t.Error("a reservation is left after it ended")
		}
	})
}

// TestNamesBoundByPolicy: a name the policy binds to a module goes to its
// file whatever the order the files sort or load in, and is not served
// while that file is missing; the other file's problem names both.
func TestNamesBoundByPolicy(t *testing.T) {
	for _, squatter := range []string{"a_squat", "z_squat"} {
		t.Run(squatter, func(t *testing.T) {
			pol := &Policy{Modules: map[string]ModulePolicy{"real": {ToolNames: []string{"beta"}}}}
			squat := verModule(t, "beta", "squatter")
			// The squatter alone at start: it does not get the name.
			f := newFSServer(t, pol, map[string][]byte{squatter + ".wasm": squat})
			c := f.s.catalog.Load()
			if got := servedFrom(c, "beta"); got != "" {
				t.Fatalf("beta served from %q, bound to a module that is missing", got)
			}
			ce, _ := conflictProblem(c, squatter+".wasm")
			if ce == nil || ce.Owner != "real" || ce.Why != plugins.ConflictBound {
				t.Fatalf("conflict %+v, want beta bound to real; problems %v", ce, c.problems)
			}
			// Both in one batch, the squatter loaded already.
			c = f.batch(map[string][]byte{squatter + ".wasm": squat, "real.wasm": verModule(t, "beta", "real-1")})
			if got := servedFrom(c, "beta"); got != "real" {
				t.Errorf("beta served from %q, want real; problems %v", got, c.problems)
			}
			ce, p := conflictProblem(c, squatter+".wasm")
			if ce == nil || ce.OwnerPath != "real.wasm" || !strings.Contains(p.String(), squatter+".wasm") || !strings.Contains(p.String(), "real.wasm") {
				t.Errorf("problem %q (%+v) does not name both files", p, ce)
			}
		})
	}
	// Both at start, loading in the background in either order.
	pol := &Policy{Modules: map[string]ModulePolicy{"real": {ToolNames: []string{"beta"}}}}
	f := newFSServer(t, pol, map[string][]byte{"a_squat.wasm": verModule(t, "beta", "squatter"), "real.wasm": verModule(t, "beta", "real-1")})
	if got := servedFrom(f.s.catalog.Load(), "beta"); got != "real" {
		t.Errorf("at start: beta served from %q, want real", got)
	}
}

// TestNamesBindingPolicyChecks: toolNames that bind one name twice are a
// policy error; a bound name the module does not declare is a problem.
func TestNamesBindingPolicyChecks(t *testing.T) {
	_, err := ParsePolicy([]byte(`{"modules":{"a":{"toolNames":["x"]},"b":{"toolNames":["x"]}}}`))
	if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), `tool name "x" is bound to two modules`) {
		t.Errorf("ParsePolicy: %v, want a binding of x to two modules refused", err)
	}
	pol := &Policy{Modules: map[string]ModulePolicy{"real": {ToolNames: []string{"beta", "gamma"}}}}
	f := newFSServer(t, pol, map[string][]byte{"real.wasm": verModule(t, "beta", "real-1")})
	found := false
	for _, p := range f.s.Problems() {
		found = found || (p.Module == "real" && strings.Contains(p.Err.Error(), `modules.real.toolNames: the module declares no tool "gamma"`))
	}
	if !found {
		t.Errorf("problems %v lack the unmatched binding of gamma", f.s.Problems())
	}
}

// TestBrokenModuleWarnedOnce: a module that fails to load is warned about
// when its problem appears, not again at every reload that finds it
// unchanged; a new problem is warned about.
func TestBrokenModuleWarnedOnce(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	put(t, dir, "junk.wasm", []byte("\x00asm\x01\x00\x00\x00garbage"))
	s, logs := newReloadServer(t, Config{ToolsDir: dir, CacheDir: testCacheDir})
	for i := range 3 {
		before := seq(s)
		put(t, dir, "a.wasm", verModule(t, "alpha", fmt.Sprint("alpha-", i+2)))
		await(s, after(before, serves("alpha")))
	}
	count := func(subs ...string) int {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return len(logs.grepLocked(subs))
	}
	if n := count("WARN tool problem", "junk.wasm"); n != 1 {
		t.Errorf("%d warnings of junk.wasm over four catalogs, want 1", n)
	}
	before := seq(s)
	put(t, dir, "junk2.wasm", []byte("not wasm"))
	await(s, after(before, func(c *catalog) bool { return len(c.problems) == 2 }))
	if n := count("WARN tool problem", "junk2.wasm"); n != 1 {
		t.Errorf("%d warnings of the new junk2.wasm, want 1", n)
	}
}
