package host

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// TestGrantsFollowModules runs random sequences of adds, removals and
// replacements of files whose modules declare colliding tool names, and
// after every reload checks each served tool: it is served by a file that
// is there now and declares it, and everything it gets from the policy —
// environment, mounts, limits, its module's admission share — is exactly
// what the policy writes for that file's name, and nothing when the entry
// pins another digest. Every tool name some file declares is served (by
// one of them); the files that lose a name, and the pins that do not
// match, are problems.
func TestGrantsFollowModules(t *testing.T) {
	const files, steps = 4, 100
	names := []string{"t0", "t1"}
	var contents []dirFile
	for _, tool := range names {
		for v := range 3 {
			b := verModule(t, tool, fmt.Sprintf("v%d", v))
			contents = append(contents, dirFile{tool, b, plugins.Digest(b)})
		}
	}
	fileName := func(i int) string { return fmt.Sprintf("f%d", i) }

	// The policy writes for each file its own environment, mount, memory
	// for both tool names and instance cap; odd files pin one content.
	mountDir := t.TempDir()
	// No reservation of a removed file's names: every name a file
	// declares is served (reload_names_test.go checks reservations).
	pol := &Policy{MaxInstances: 16, NameGrace: -1, Modules: map[string]ModulePolicy{}}
	for i := range files {
		mp := ModulePolicy{
			MaxInstances: 1 + i,
			Grants: Grants{
				Env:    map[string]string{"GRANTED_TO": fileName(i)},
				Mounts: []MountPolicy{{HostDir: mountDir, GuestPath: "/" + fileName(i)}},
			},
			Tools: map[string]ToolPolicy{"t0": {MemoryMiB: 10 + i}, "t1": {MemoryMiB: 20 + i}},
		}
		if i%2 == 1 {
			mp.Digest = contents[i].digest
		}
		pol.Modules[fileName(i)] = mp
	}
	// want is what a tool of file name with digest d must get.
	want := func(name, d, tool string) grant {
		mp := pol.Modules[name]
		if mp.Digest != "" && mp.Digest != d {
			return grant{MemoryMiB: DefaultMemoryMiB, Instances: pol.MaxInstances / 4}
		}
		return grant{
			Env:       map[string]string{"GRANTED_TO": name},
			Mounts:    []wasmrt.Mount{{HostDir: mountDir, GuestPath: "/" + name}},
			MemoryMiB: mp.Tools[tool].MemoryMiB,
			Instances: mp.MaxInstances,
		}
	}

	var seen coverage
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			dir := map[string]dirFile{} // the tool directory now
			fsys := func() fstest.MapFS {
				m := fstest.MapFS{}
				for name, c := range dir {
					m[name+".wasm"] = &fstest.MapFile{Data: c.wasm}
				}
				return m
			}
			dir[fileName(0)] = contents[0]
			s, err := New(context.Background(), Config{ToolsFS: fsys(), Policy: pol, CacheDir: testCacheDir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_ = s.ready(context.Background(), "")
			var history []string
			for step := range steps {
				name := fileName(r.IntN(files))
				switch _, there := dir[name]; {
				case there && r.IntN(3) == 0:
					delete(dir, name)
					seen.removals++
					history = append(history, "rm "+name)
				default: // add or replace
					c := contents[r.IntN(len(contents))]
					dir[name] = c
					history = append(history, fmt.Sprintf("put %s %s@%s", name, c.tool, c.digest[7:13]))
				}
				snap, err := plugins.ScanFS(fsys(), plugins.Config{})
				if err != nil {
					t.Fatal(err)
				}
				s.reload(context.Background(), snap)
				settled := func(c *catalog) bool { return c.gen.Snapshot() == snap && c.gen.Loading() == 0 }
				if err := s.awaitCatalog(context.Background(), settled); err != nil {
					t.Fatal(err)
				}
				c, release := s.acquire()
				err = checkGrants(c, dir, want, names, &seen)
				release()
				if err != nil {
					t.Fatalf("after step %d (%s): %v\nsteps: %s", step, history[len(history)-1], err, strings.Join(history, "; "))
				}
			}
		})
	}
	t.Logf("checked %d served tools (%d under a pin they do not match), %d refused modules, after %d removals", seen.tools, seen.mismatches, seen.conflicts, seen.removals)
	if seen.mismatches == 0 || seen.tools == seen.mismatches || seen.conflicts == 0 || seen.removals == 0 {
		t.Errorf("the sequences missed a case: %+v", seen)
	}
}

// coverage counts what a run of TestGrantsFollowModules checked.
type coverage struct{ tools, mismatches, conflicts, removals int }

// dirFile is a file of the tool directory in TestGrantsFollowModules.
type dirFile struct {
	tool   string // the one tool its module declares
	wasm   []byte
	digest string
}

// grant is what a served tool gets from the policy, as
// TestGrantsFollowModules compares it.
type grant struct {
	Env       map[string]string
	Mounts    []wasmrt.Mount
	MemoryMiB int
	Instances int
}

// checkGrants checks catalog c against the directory's files; see
// TestGrantsFollowModules.
func checkGrants(c *catalog, dir map[string]dirFile, want func(name, digest, tool string) grant, names []string, seen *coverage) error {
	problems := map[string]string{}
	for _, p := range c.problems {
		problems[p.Module] += p.Err.Error() + "; "
	}
	served := map[string]bool{}
	for tool, st := range c.tools {
		name, d := st.module.Name, st.module.Digest
		f, ok := dir[name]
		switch {
		case !ok:
			return fmt.Errorf("tool %s is served by module %s, which is not in the directory", tool, name)
		case f.digest != d || f.tool != tool:
			return fmt.Errorf("tool %s is served by %s@%s, but that file holds %s@%s", tool, name, d, f.tool, f.digest)
		}
		served[name] = true
		mod := st.slot.Module()
		slots, _ := c.srv.adm.ModuleShare(mod)
		got := grant{Env: st.lim.Env, Mounts: st.lim.Mounts, MemoryMiB: st.lim.MemoryMiB, Instances: slots}
		if diff := cmp.Diff(want(name, d, tool), got); diff != "" {
			return fmt.Errorf("tool %s of %s@%s gets (-written for it +got):\n%s", tool, name, d[7:13], diff)
		}
		if mod.Name() != name || c.modules[name] != mod {
			return fmt.Errorf("tool %s of %s is admitted in the share of module %s", tool, name, mod.Name())
		}
		mismatch := want(name, d, tool).Env == nil
		if mismatch != strings.Contains(problems[name], "pins digest") {
			return fmt.Errorf("module %s@%s: pin not matched %v, problems %q", name, d[7:13], mismatch, problems[name])
		}
		seen.tools++
		if mismatch {
			seen.mismatches++
		}
	}
	declared := map[string]bool{}
	for name, f := range dir {
		declared[f.tool] = true
		if served[name] {
			continue
		}
		if !strings.Contains(problems[name], plugins.ErrToolConflict.Error()) {
			return fmt.Errorf("module %s is not served and has no tool-conflict problem (problems %q)", name, problems[name])
		}
		seen.conflicts++
	}
	for _, tool := range names {
		if _, ok := c.tools[tool]; ok != declared[tool] {
			return fmt.Errorf("tool %s: served %v, declared by a file %v", tool, ok, declared[tool])
		}
	}
	return nil
}
