package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wasmtask/wasmtask/plugins"
)

// TestReloadDirectoryLifecycle: the directory must exist at start; once
// served it may be emptied, deleted (a problem, no tools) and created
// again, and switched through a symbolic link.
func TestReloadDirectoryLifecycle(t *testing.T) {
	t.Run("missing at start, then emptied, deleted, recreated", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "tools")
		if _, err := New(context.Background(), Config{ToolsDir: dir}); !errors.Is(err, plugins.ErrNoDir) {
			t.Fatalf("New with a missing directory: got %v, want an error wrapping plugins.ErrNoDir", err)
		}

		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s, _ := newReloadServer(t, Config{ToolsDir: dir})
		c := newClient(t, s)
		if got := s.Problems(); len(got) != 0 {
			t.Errorf("empty directory: got problems %q, want none", got)
		}
		put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
		await(s, serves("alpha"))
		if got := c.CallTool("alpha", map[string]any{}).Text(); got != "alpha-1" {
			t.Errorf("got %q, want alpha-1", got)
		}

		remove(t, dir, "a.wasm")
		await(s, serves())
		put(t, dir, "b.wasm", verModule(t, "beta", "beta-1"))
		await(s, serves("beta"))

		// Deleted while served: no tools, and a problem that says why.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		await(s, func(c *catalog) bool { return serves()(c) && len(c.problems) > 0 })
		ps := s.Problems()
		if len(ps) != 1 || !errors.Is(ps[0].Err, plugins.ErrNoDir) || ps[0].Path != dir {
			t.Errorf("deleted directory: got problems %q, want one for %s wrapping plugins.ErrNoDir", ps, dir)
		}
		if got := listTools(t, c); len(got) != 0 {
			t.Errorf("tools/list of a deleted directory = %v, want none", got)
		}

		// Created again: watched again.
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		put(t, dir, "c.wasm", verModule(t, "gamma", "gamma-1"))
		await(s, func(c *catalog) bool { return serves("gamma")(c) && len(c.problems) == 0 })
		if got := c.CallTool("gamma", map[string]any{}).Text(); got != "gamma-1" {
			t.Errorf("got %q, want gamma-1", got)
		}
	})

	t.Run("symlink switch", func(t *testing.T) {
		root := t.TempDir()
		for rel, tool := range map[string]string{"rel1": "alpha", "rel2": "beta"} {
			if err := os.Mkdir(filepath.Join(root, rel), 0o755); err != nil {
				t.Fatal(err)
			}
			put(t, filepath.Join(root, rel), tool+".wasm", verModule(t, tool, rel))
		}
		current := filepath.Join(root, "current")
		if err := os.Symlink("rel1", current); err != nil {
			t.Fatal(err)
		}
		switchTo := func(rel string) {
			tmp := filepath.Join(root, ".current.tmp")
			if err := os.Symlink(rel, tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, current); err != nil {
				t.Fatal(err)
			}
		}
		s, _ := newReloadServer(t, Config{ToolsDir: current})
		c := newClient(t, s)
		if got := listTools(t, c); !slices.Equal(got, []string{"alpha"}) {
			t.Fatalf("tools/list = %v, want [alpha]", got)
		}
		for _, step := range []struct{ rel, tool string }{{"rel2", "beta"}, {"rel1", "alpha"}, {"rel2", "beta"}} {
			switchTo(step.rel)
			await(s, serves(step.tool))
			if got := c.CallTool(step.tool, map[string]any{}).Text(); got != step.rel {
				t.Errorf("after switching to %s: got %q, want %q", step.rel, got, step.rel)
			}
		}
		// The new target is watched: a change inside it is picked up.
		put(t, filepath.Join(root, "rel2"), "gamma.wasm", verModule(t, "gamma", "rel2"))
		await(s, serves("beta", "gamma"))
		if got := listTools(t, c); !slices.Equal(got, []string{"beta", "gamma"}) {
			t.Errorf("tools/list = %v, want [beta gamma]", got)
		}
	})
}
