package host

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestReloadStorm changes the directory many times while a client keeps
// calls and tasks running on tools that are always present (their versions
// change). No call may fail; at the end the served set is the directory's.
func TestReloadStorm(t *testing.T) {
	const (
		stable  = 3 // modules always present, called by the client
		workers = 6 // calls the client keeps in flight
		changes = 120
	)
	dir := t.TempDir()
	files := map[string]string{} // module name → digest, as the directory holds them
	for i := range stable {
		b := verModule(t, fmt.Sprintf("st%d", i), "g0")
		put(t, dir, fmt.Sprintf("s%d.wasm", i), b)
		files[fmt.Sprintf("s%d", i)] = digest(b)
	}
	plan := planStorm(t, changes, stable, files)
	s, _ := newReloadServer(t, Config{ToolsDir: dir})
	c := newClient(t, s)

	// The directory changes in a goroutine of its own, which returns its
	// first error; the test's goroutine is the client's. The goroutine
	// ends before the test does, even a failed one.
	ctx, cancel := context.WithCancel(context.Background())
	stormed, ended := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(ended)
		stormed <- plan.run(ctx, s, dir)
	}()
	t.Cleanup(func() { cancel(); <-ended })

	// Each worker is a sequence of operations on the one session, one at
	// a time: a plain call, or a task (tools/call, then tasks/result, then
	// tasks/get). The workers' requests are in flight together.
	type worker struct {
		r     *rand.Rand
		ops   int
		tool  string
		task  string // the task of the operation, once created
		stage string // what the request in flight is
	}
	pending := map[int64]*worker{}
	start := func(w *worker) {
		w.tool = fmt.Sprintf("st%d", w.r.IntN(stable))
		args := map[string]any{"ms": w.r.IntN(15)}
		if w.ops%2 == 0 {
			w.stage = "task"
			pending[c.Request("tools/call", map[string]any{"name": w.tool, "arguments": args, "task": map[string]any{}})] = w
			return
		}
		w.stage = "call"
		pending[c.Request("tools/call", map[string]any{"name": w.tool, "arguments": args})] = w
	}
	for i := range workers {
		start(&worker{r: rand.New(rand.NewPCG(uint64(i), 1))})
	}
	var (
		done                    bool // the storm is over
		calls, listChanged, bad int
	)
	check := func(w *worker, m hosttest.Message) {
		if text, failed := outcome(t, m); failed || !strings.HasPrefix(text, "g") {
			if bad++; bad <= 10 {
				t.Errorf("%s of %s (operation %d): got %q (failed: %v), want a version's answer", w.stage, w.tool, w.ops, text, failed)
			}
		}
	}
	for len(pending) > 0 {
		if !done {
			select {
			case err := <-stormed:
				if err != nil {
					t.Fatal(err)
				}
				done = true
			default:
			}
		}
		m := c.Next()
		if m.Method == "notifications/tools/list_changed" {
			listChanged++
		}
		w := pending[idOf(m)]
		if !m.IsResponse() || w == nil {
			continue // notifications: task status, list changes
		}
		delete(pending, idOf(m))
		switch w.stage {
		case "task":
			var r hosttest.ToolResult
			if err := m.Decode(&r); err != nil || r.Task == nil {
				t.Fatalf("tools/call of %s as a task: got %s, want a task", w.tool, m.Raw)
			}
			w.task, w.stage = r.Task.TaskID, "tasks/result"
			pending[c.Request("tasks/result", map[string]any{"taskId": w.task})] = w
			continue
		case "tasks/result":
			check(w, m)
			w.stage = "tasks/get"
			pending[c.Request("tasks/get", map[string]any{"taskId": w.task})] = w
			continue
		case "tasks/get":
			var task hosttest.Task
			if err := m.Decode(&task); err != nil || task.Status != "completed" {
				t.Errorf("tasks/get of a task of %s that answered: got %s, want completed", w.tool, m.Raw)
			}
		case "call":
			check(w, m)
		}
		calls++
		if w.ops++; !done || w.ops < 5 {
			start(w)
		}
	}
	if !done {
		if err := <-stormed; err != nil {
			t.Fatal(err)
		}
	}

	await(s, built(plan.final))
	want := []string{"st0", "st1", "st2"}
	for name := range plan.final {
		if strings.HasPrefix(name, "x") {
			want = append(want, name)
		}
	}
	if got, want := names(s.catalog.Load()), slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
		t.Errorf("served after the storm: %v, want %v", got, want)
	}
	t.Logf("%d changes, %d reloads, %d calls and tasks, %d list_changed", changes, seq(s)-1, calls, listChanged)
	// Every other change is awaited before the next: each awaited set of
	// files that differs from the one awaited before took a reload.
	if n := seq(s) - 1; n < uint64(plan.minReloads) {
		t.Errorf("got %d reloads, want at least %d", n, plan.minReloads)
	}
}

func idOf(m hosttest.Message) int64 {
	id, _ := m.ID.(int64)
	return id
}

// stormPlan is the storm's changes, computed before it starts so that the
// goroutine that applies them calls nothing that may fail the test.
type stormPlan struct {
	steps      []stormStep
	final      map[string]string // module name → digest at the end
	minReloads int               // awaited sets that differ from the one awaited before
}

type stormStep struct {
	file  string            // base name
	wasm  []byte            // nil: remove the file
	await map[string]string // when set: wait until exactly these modules are served
}

// planStorm plans changes changes of the directory holding files: new
// versions of the stable modules (which keep their tools), extra modules
// that come and go, and a broken file that comes and goes. Every other
// change is awaited; the others pile up.
func planStorm(tb testing.TB, changes, stable int, files map[string]string) *stormPlan {
	tb.Helper()
	r := rand.New(rand.NewPCG(42, 42))
	files = maps.Clone(files)
	p := &stormPlan{}
	write := func(name string, b []byte) {
		p.steps = append(p.steps, stormStep{file: name + ".wasm", wasm: b})
		files[name] = digest(b)
	}
	drop := func(name string) {
		p.steps = append(p.steps, stormStep{file: name + ".wasm"})
		delete(files, name)
	}
	extras := map[string]bool{} // extra module names present
	awaited := maps.Clone(files)
	for i := 1; i <= changes; i++ {
		switch k := r.IntN(6); {
		case k < 3: // new version of a stable module
			n := r.IntN(stable)
			write(fmt.Sprintf("s%d", n), verModule(tb, fmt.Sprintf("st%d", n), fmt.Sprintf("g%d", i)))
		case k == 3 || len(extras) == 0: // add an extra module, or a new version of it
			name := fmt.Sprintf("x%d", r.IntN(8))
			write(name, verModule(tb, name, fmt.Sprintf("x%d", i)))
			extras[name] = true
		case k == 4: // remove an extra module
			name := slices.Sorted(maps.Keys(extras))[r.IntN(len(extras))]
			drop(name)
			delete(extras, name)
		default: // a broken file comes and goes
			if _, ok := files["junk"]; ok {
				drop("junk")
			} else {
				write("junk", []byte("\x00asm\x01\x00\x00\x00garbage"))
			}
		}
		if i%2 == 0 {
			if !maps.Equal(files, awaited) {
				p.minReloads++
			}
			awaited = maps.Clone(files)
			p.steps[len(p.steps)-1].await = awaited
		}
	}
	p.final = files
	return p
}

// run applies the plan to dir, waiting for s to serve the awaited steps,
// until ctx is done.
func (p *stormPlan) run(ctx context.Context, s *Server, dir string) error {
	for _, st := range p.steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		if st.wasm != nil {
			err = writeModule(dir, st.file, st.wasm)
		} else {
			err = os.Remove(filepath.Join(dir, st.file))
		}
		if err != nil {
			return err
		}
		if st.await != nil {
			if err := s.awaitCatalog(ctx, built(st.await)); err != nil {
				return err
			}
		}
	}
	return nil
}
