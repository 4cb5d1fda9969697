package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wasmtask/wasmtask/abi"
)

// fakeCompiled stands for the host's compiled module.
type fakeCompiled struct{ digest string }

// fakeLoader "compiles" a file whose content is its manifest JSON and
// decodes it with abi.DecodeManifest, as the host does. Content starting
// with "trap" fails to compile; content "no manifest" compiles but returns
// no manifest.
type fakeLoader struct {
	loads    []string // module names, in order
	released []string // digests
}

func (f *fakeLoader) Load(ctx context.Context, m Module, wasm []byte) (*fakeCompiled, *abi.Manifest, error) {
	f.loads = append(f.loads, m.Name)
	c := &fakeCompiled{digest: m.Digest}
	switch {
	case strings.HasPrefix(string(wasm), "trap"):
		return nil, nil, errors.New("compile: unreachable")
	case string(wasm) == "no manifest":
		return c, nil, nil
	}
	man, err := abi.DecodeManifest(wasm)
	if err != nil {
		return c, nil, err
	}
	return c, man, nil
}

func (f *fakeLoader) Release(c *fakeCompiled) {
	if c != nil {
		f.released = append(f.released, c.digest)
	}
}

func manifest(tools ...string) string {
	m := abi.Manifest{ABI: abi.Version}
	for _, t := range tools {
		m.Tools = append(m.Tools, abi.Tool{Name: t})
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// toolOwners maps each tool of g to the module that declares it, checking
// Tool on the way.
func toolOwners(t *testing.T, g *Generation[*fakeCompiled]) map[string]string {
	t.Helper()
	owners := map[string]string{}
	for n := range g.tools {
		l, tool, ok := g.Tool(n)
		if !ok || tool.Name != n {
			t.Errorf("Tool(%q) = %v, %v", n, tool.Name, ok)
		}
		owners[n] = l.Module.Name
	}
	return owners
}

func problemsOf(g *Generation[*fakeCompiled]) []string {
	var ps []string
	for _, p := range g.Problems() {
		ps = append(ps, p.Name+": "+sentinelName(p.Err))
	}
	return ps
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	fl := &fakeLoader{}
	var gen *Generation[*fakeCompiled]

	type want struct {
		loads    []string          // modules compiled by this step
		released []string          // contents whose compiled module is released
		tools    map[string]string // tool → module
		problems []string          // module: sentinel
	}
	steps := []struct {
		name string
		do   func()
		want want
	}{
		{"start", func() {
			writeFile(t, filepath.Join(dir, "a.wasm"), manifest("x"))
			writeFile(t, filepath.Join(dir, "b.wasm"), manifest("y"))
		}, want{loads: []string{"a", "b"}, tools: map[string]string{"x": "a", "y": "b"}}},

		{"rename reuses the compiled module", func() {
			os.Rename(filepath.Join(dir, "b.wasm"), filepath.Join(dir, "c.wasm"))
		}, want{tools: map[string]string{"x": "a", "y": "c"}}},

		{"bad manifest keeps the previous version", func() {
			writeFile(t, filepath.Join(dir, "a.wasm"), `{"abi":1,"tools":[]}`)
		}, want{loads: []string{"a"}, tools: map[string]string{"x": "a", "y": "c"},
			problems: []string{"a: module failed to load"}}},

		{"a failed digest is not loaded again", func() {
			writeFile(t, filepath.Join(dir, "e.wasm"), manifest("e"))
		}, want{loads: []string{"e"}, tools: map[string]string{"x": "a", "y": "c", "e": "e"},
			problems: []string{"a: module failed to load"}}},

		{"fixed module replaces the old version", func() {
			writeFile(t, filepath.Join(dir, "a.wasm"), manifest("x", "z"))
		}, want{loads: []string{"a"}, released: []string{manifest("x")},
			tools: map[string]string{"x": "a", "z": "a", "y": "c", "e": "e"}}},

		{"compile error of a new module", func() {
			writeFile(t, filepath.Join(dir, "t.wasm"), "trap")
		}, want{loads: []string{"t"}, tools: map[string]string{"x": "a", "z": "a", "y": "c", "e": "e"},
			problems: []string{"t: module failed to load"}}},

		{"tool conflict: the module already serving keeps it", func() {
			os.Remove(filepath.Join(dir, "t.wasm"))
			writeFile(t, filepath.Join(dir, "b.wasm"), manifest("y", "w"))
		}, want{loads: []string{"b"}, // refused, but kept loaded for the next Build
			tools:    map[string]string{"x": "a", "z": "a", "y": "c", "e": "e"},
			problems: []string{"b: tool name declared by two modules"}}},

		{"removal releases", func() {
			os.Remove(filepath.Join(dir, "c.wasm"))
			os.Remove(filepath.Join(dir, "e.wasm"))
		}, want{loads: nil, released: []string{manifest("y"), manifest("e")}, // b was kept loaded when refused
			tools: map[string]string{"x": "a", "z": "a", "y": "b", "w": "b"}}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			snap, err := Scan(ctx, Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			fl.loads, fl.released = nil, nil
			next, released := Build(ctx, gen, snap, fl, Rules{})
			for _, c := range released {
				fl.Release(c)
			}
			got := want{loads: fl.loads, tools: toolOwners(t, next), problems: problemsOf(next)}
			for _, d := range fl.released {
				for _, c := range []string{manifest("x"), manifest("y"), manifest("y", "w"), manifest("e")} {
					if sum(c) == d {
						got.released = append(got.released, c)
					}
				}
			}
			slices.Sort(got.released)
			slices.Sort(st.want.released)
			if diff := cmp.Diff(st.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if next.Seq() != gen.Seq()+1 {
				t.Errorf("Seq = %d, want %d", next.Seq(), gen.Seq()+1)
			}
			gen = next
		})
	}
}

// TestBuildRefuses checks the modules Build refuses in one build, what it
// loads for them, and what it releases at once.
func TestBuildRefuses(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		loads    []string
		released []string // digests of compiled modules Build released itself
		problems []string
	}{
		{"a loader that returns no manifest", map[string]string{"a": "no manifest"},
			[]string{"a"}, []string{sum("no manifest")}, []string{"a: module failed to load"}},
		{"an invalid manifest", map[string]string{"a": `{"abi":1,"tools":[]}`},
			[]string{"a"}, []string{sum(`{"abi":1,"tools":[]}`)}, []string{"a: module failed to load"}},
		{"two files with one failing content are loaded once", map[string]string{"a": "trap", "b": "trap"},
			[]string{"a"}, nil, []string{"a: module failed to load", "b: module failed to load"}},
		{"two files with one good content are loaded once, and conflict", map[string]string{"a": manifest("x"), "b": manifest("x")},
			[]string{"a"}, nil, []string{"b: tool name declared by two modules"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tt.files {
				writeFile(t, filepath.Join(dir, n+".wasm"), c)
			}
			snap, err := Scan(context.Background(), Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			fl := &fakeLoader{}
			next, released := Build(context.Background(), nil, snap, fl, Rules{})
			if diff := cmp.Diff(tt.loads, fl.loads); diff != "" {
				t.Errorf("loads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.released, fl.released); diff != "" {
				t.Errorf("released by Build (-want +got):\n%s", diff)
			}
			if len(released) != 0 {
				t.Errorf("released for the host: %d, want none (there was no previous generation)", len(released))
			}
			if diff := cmp.Diff(tt.problems, problemsOf(next)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildCancelledIsRetried(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.wasm"), manifest("x"))
	snap, err := Scan(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fl := &fakeLoader{}
	g1, _ := Build(ctx, nil, snap, fl, Rules{})
	if ps := g1.Problems(); len(ps) != 1 || !errors.Is(ps[0].Err, context.Canceled) {
		t.Fatalf("problems %v, want one wrapping context.Canceled", ps)
	}
	g2, _ := Build(context.Background(), g1, snap, fl, Rules{})
	if _, _, ok := g2.Tool("x"); !ok {
		t.Errorf("after a cancelled build, the next build did not load the module; problems %v", g2.Problems())
	}
}
