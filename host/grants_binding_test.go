package host

import (
	"math/rand/v2"
	"testing"
)

// TestGrantsFollowTheFileNotTheName runs random sequences of adds,
// removals and replacements of two module files that declare the same tool
// name, with a policy granting an environment variable to one file, pinned
// to one content of it. After every step, whichever file serves the tool,
// the tool gets the grant exactly when it comes from that file with that
// content: a grant written for one module never reaches another.
func TestGrantsFollowTheFileNotTheName(t *testing.T) {
	v1, v2 := verModule(t, "shared", "v1"), verModule(t, "shared", "v2")
	other := verModule(t, "shared", "x9")
	pol := &Policy{Modules: map[string]ModulePolicy{
		"granted.wasm": {Digest: digest(v1), ToolPolicy: ToolPolicy{Env: map[string]string{"SECRET": "yes"}}},
	}}
	dir := t.TempDir()
	s, _ := newReloadServer(t, Config{ToolsDir: dir, Policy: pol})

	rng := rand.New(rand.NewPCG(11, 7))
	present := map[string][]byte{} // file → content
	contents := map[string][][]byte{
		"granted.wasm":  {v1, v2},
		"impostor.wasm": {v1, other}, // v1: the very bytes the pin names
	}
	for step := range 40 {
		file := []string{"granted.wasm", "impostor.wasm"}[rng.IntN(2)]
		if _, ok := present[file]; ok && rng.IntN(3) == 0 {
			remove(t, dir, file)
			delete(present, file)
		} else {
			b := contents[file][rng.IntN(2)]
			put(t, dir, file, b)
			present[file] = b
		}
		want := map[string]string{}
		for f, b := range present {
			want[f[:len(f)-len(".wasm")]] = digest(b)
		}
		await(s, built(want))

		c := s.catalog.Load()
		st, ok := c.tools["shared"]
		if !ok {
			if len(present) > 0 {
				t.Fatalf("step %d: files %v present, tool not served", step, want)
			}
			continue
		}
		granted := st.module.Name == "granted" && st.module.Digest == digest(v1)
		if got := st.lim.Env["SECRET"] == "yes"; got != granted {
			t.Fatalf("step %d: tool served by %s (%s) has the grant: %v, want %v", step, st.module.Name, st.module.Digest[:15], got, granted)
		}
	}
}
