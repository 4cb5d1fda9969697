package host

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestReloadScript walks one directory through adding, replacing, renaming,
// copying in, truncating, corrupting and removing modules, checking after
// each step the served tools, what each tool answers, the problems (in
// Server.Problems and the log), the number of reloads, and that a connected
// client was told the list changed.
func TestReloadScript(t *testing.T) {
	dir := t.TempDir()
	// A longer quiet time than the other tests: the copy step writes a
	// file in chunks, which the watcher should usually take whole. No
	// reservation of a removed module's names: the rename and removal
	// steps check the rules without it (reload_names_test.go checks it).
	s, logs := newReloadServer(t, Config{ToolsDir: dir, ReloadDebounce: 50 * time.Millisecond, Policy: &Policy{NameGrace: -1}})
	c := newClient(t, s)
	if got := s.Problems(); len(got) != 0 {
		t.Fatalf("empty directory: got problems %q, want none", got)
	}
	// listChanged counts notifications/tools/list_changed, which may
	// arrive while the client waits for any response.
	listChanged := 0
	count := func(m hosttest.Message) {
		if m.Method == "notifications/tools/list_changed" {
			listChanged++
		}
	}
	call := func(method string, params any) hosttest.Message {
		t.Helper()
		return c.Await(c.Request(method, params), count)
	}

	var reusedFrom *catalog
	steps := []struct {
		name     string
		do       func(t *testing.T)
		tools    []string
		answers  map[string]string // tool → text of a plain call
		problems map[string]string // file → part of the cause
		reloads  uint64            // exact number of rescans of the directory; 0: at least one
		changed  bool              // the tool list changed: clients are told
		check    func(t *testing.T)
	}{{
		name:    "add by rename",
		do:      func(t *testing.T) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1")) },
		tools:   []string{"alpha"},
		answers: map[string]string{"alpha": "alpha-1"},
		reloads: 1, changed: true,
	}, {
		name:    "replace by rename",
		do:      func(t *testing.T) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-2")) },
		tools:   []string{"alpha"},
		answers: map[string]string{"alpha": "alpha-2"},
		reloads: 1,
	}, {
		name: "rename the file",
		do: func(t *testing.T) {
			reusedFrom = s.catalog.Load()
			if err := os.Rename(filepath.Join(dir, "a.wasm"), filepath.Join(dir, "b.wasm")); err != nil {
				t.Fatal(err)
			}
		},
		tools:   []string{"alpha"},
		answers: map[string]string{"alpha": "alpha-2"},
		reloads: 1,
		check: func(t *testing.T) {
			st := s.catalog.Load().tools["alpha"]
			if st.module.Name != "b" {
				t.Errorf("module name after the rename: got %q, want b", st.module.Name)
			}
			if st.code != reusedFrom.tools["alpha"].code {
				t.Error("a renamed file with the same content was compiled again")
			}
		},
	}, {
		name: "copy in progress",
		do: func(t *testing.T) {
			b := verModule(t, "beta", "beta-1")
			f, err := os.Create(filepath.Join(dir, "c.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for chunk := range slices.Chunk(b, len(b)/4+1) {
				if _, err := f.Write(chunk); err != nil {
					t.Fatal(err)
				}
				f.Sync()
			}
		},
		// Whether the watcher sees the file half-written depends on the
		// pauses between the writes (the quiet time is a clock), which a
		// busy machine stretches: the step asserts only what must hold
		// either way — once the last write is seen, the whole module is
		// served and no problem is left for it.
		tools:   []string{"alpha", "beta"},
		answers: map[string]string{"alpha": "alpha-2", "beta": "beta-1"},
		changed: true,
	}, {
		name: "truncate in place",
		do: func(t *testing.T) {
			if err := os.Truncate(filepath.Join(dir, "b.wasm"), 0); err != nil {
				t.Fatal(err)
			}
		},
		tools:    []string{"alpha", "beta"},
		answers:  map[string]string{"alpha": "alpha-2"},
		problems: map[string]string{"b.wasm": "still serving the previous version"},
		reloads:  1,
	}, {
		name: "corrupt module",
		do: func(t *testing.T) {
			b := verModule(t, "delta", "delta-1")
			put(t, dir, "d.wasm", b[:len(b)*2/3])
		},
		tools:    []string{"alpha", "beta"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil"},
		reloads:  1,
	}, {
		name: "wrong ABI version",
		do: func(t *testing.T) {
			put(t, dir, "e.wasm", replaceOnce(t, verModule(t, "eps", "e-1"), `{"abi":1,"name":"ver"`, `{"abi":2,"name":"ver"`))
		},
		tools:    []string{"alpha", "beta"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil", "e.wasm": "abi"},
		reloads:  1,
	}, {
		name: "bad manifest",
		do: func(t *testing.T) {
			put(t, dir, "f.wasm", replaceOnce(t, verModule(t, "phi", "f-1"), `"taskSupport":"optional"`, `"taskSupport":"sometime"`))
		},
		tools:    []string{"alpha", "beta"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil", "e.wasm": "abi", "f.wasm": "sometime"},
		reloads:  1,
	}, {
		name:     "two modules declare one tool",
		do:       func(t *testing.T) { put(t, dir, "g.wasm", verModule(t, "alpha", "alpha-g")) },
		tools:    []string{"alpha", "beta"},
		answers:  map[string]string{"alpha": "alpha-2"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil", "e.wasm": "abi", "f.wasm": "sometime", "g.wasm": `tool "alpha" is already declared by module "b"`},
		reloads:  1,
	}, {
		name:     "fix the truncated module",
		do:       func(t *testing.T) { put(t, dir, "b.wasm", verModule(t, "alpha", "alpha-3")) },
		tools:    []string{"alpha", "beta"},
		answers:  map[string]string{"alpha": "alpha-3"},
		problems: map[string]string{"d.wasm": "compil", "e.wasm": "abi", "f.wasm": "sometime", "g.wasm": "already declared"},
		reloads:  1,
	}, {
		name:    "remove the bad ones and the owner of a contested name",
		do:      func(t *testing.T) { remove(t, dir, "b.wasm", "d.wasm", "e.wasm", "f.wasm") },
		tools:   []string{"alpha", "beta"},
		answers: map[string]string{"alpha": "alpha-g", "beta": "beta-1"},
	}, {
		name:  "empty the directory",
		do:    func(t *testing.T) { remove(t, dir, "c.wasm", "g.wasm") },
		tools: []string{}, changed: true,
	}}

	for _, st := range steps {
		ok := t.Run(st.name, func(t *testing.T) {
			before, scans, notified := seq(s), scanSeq(s), listChanged
			st.do(t)
			wantProblems := slices.Sorted(maps.Keys(st.problems))
			await(s, after(before, func(c *catalog) bool {
				return serves(st.tools...)(c) && slices.Equal(problemFiles(c), wantProblems)
			}))
			if got := scanSeq(s) - scans; st.reloads > 0 && got != st.reloads {
				t.Errorf("got %d rescans, want %d", got, st.reloads)
			}
			// tools/list reads the served catalog.
			if got, want := listTools(t, rpc(call)), slices.Sorted(slices.Values(st.tools)); !slices.Equal(got, want) {
				t.Errorf("tools/list = %v, want %v", got, want)
			}
			for _, p := range s.Problems() {
				file := filepath.Base(p.Path)
				if cause, ok := st.problems[file]; ok && !strings.Contains(p.String(), cause) {
					t.Errorf("problem of %s: got %q, want its cause to mention %q", file, p, cause)
				}
				// The log follows the swap.
				logs.await("tool problem", file)
			}
			for tool, want := range st.answers {
				r := call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})
				if got := answer(t, r); got != want {
					t.Errorf("call %s: got %q, want %q", tool, got, want)
				}
			}
			if st.changed {
				// The notification follows the swap; wait for it on the
				// session.
				for listChanged == notified {
					count(c.Next())
				}
			}
			if st.check != nil {
				st.check(t)
			}
		})
		if !ok {
			t.FailNow()
		}
	}
}

// rpc adapts a call function to what listTools takes.
type rpc func(method string, params any) hosttest.Message

func (f rpc) Call(method string, params any) hosttest.Message { return f(method, params) }
