package sandbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/host"
)

// serveFiles starts a Server on files named as the operator named them
// (module name → the testdata module it holds), closed at cleanup. It
// does not look at Problems.
func serveFiles(t *testing.T, interpreter bool, pol *host.Policy, files map[string]string) *host.Server {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, m := range files {
		fsys[name+".wasm"] = &fstest.MapFile{Data: wasm(t, m)}
	}
	s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Policy: pol, Interpreter: interpreter})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// problemsText joins the problems of s.
func problemsText(s *host.Server) string {
	var b strings.Builder
	for _, p := range s.Problems() {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// TestGrantsBindToModules: grants are written for a module (a file name,
// optionally a digest), and a module that declares the same tool name as
// another never receives the other's grants. Two files hold the envargs
// module, so both declare the tool "environ"; the one that loses the name
// (beta, by name order) is refused, and the environment written for it
// does not reach the winner's calls. A digest pin that does not match the
// file grants nothing and is a problem.
func TestGrantsBindToModules(t *testing.T) {
	sum := sha256.Sum256(wasm(t, "envargs"))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	other := "sha256:" + strings.Repeat("0", 64)
	onEngines(t, func(t *testing.T, e engine) {
		for _, tc := range []struct {
			name        string
			modules     map[string]host.ModulePolicy
			wantEnv     []string
			wantProblem string
		}{
			{"grants of the module that lost the name",
				map[string]host.ModulePolicy{"beta": {Grants: host.Grants{Env: map[string]string{"SANDBOX_FOR": "beta"}}}},
				nil, `tool "environ" is already declared by module "alpha"`},
			{"grants of the module that serves it",
				map[string]host.ModulePolicy{"alpha": {Grants: host.Grants{Env: map[string]string{"SANDBOX_FOR": "alpha"}}}},
				[]string{"SANDBOX_FOR=alpha"}, `tool "environ" is already declared by module "alpha"`},
			{"pinned to the file's digest",
				map[string]host.ModulePolicy{"alpha": {Digest: digest, Grants: host.Grants{Env: map[string]string{"SANDBOX_FOR": "alpha"}}}},
				[]string{"SANDBOX_FOR=alpha"}, ""},
			{"pinned to another digest",
				map[string]host.ModulePolicy{"alpha": {Digest: other, Grants: host.Grants{Env: map[string]string{"SANDBOX_FOR": "alpha"}}}},
				nil, "modules.alpha pins digest " + other + " but the file is " + digest},
		} {
			t.Run(tc.name, func(t *testing.T) {
				watchBaseline(t)
				s := serveFiles(t, e.interpreter, policy(tc.modules), map[string]string{"alpha": "envargs", "beta": "envargs"})
				_, _, env := envOf(t, text(t, s, "environ", "{}", nil))
				if diff := cmp.Diff(tc.wantEnv, env); diff != "" {
					t.Errorf("environment of alpha's environ (-want +got):\n%s", diff)
				}
				if ps := problemsText(s); tc.wantProblem != "" && !strings.Contains(ps, tc.wantProblem) {
					t.Errorf("problems:\n%swant one saying %q", ps, tc.wantProblem)
				}
				for _, ti := range s.Tools() {
					if ti.Module != "alpha" {
						t.Errorf("tool %s served by module %s, want alpha (name order)", ti.Name, ti.Module)
					}
				}
			})
		}
	})
}

// TestModuleCannotTakeAllInstances: with the default module cap (a quarter
// of the server's slots), calls of one module that block forever leave slots to
// the other modules: the queued calls of the first wait, and a call of
// another module runs at once.
func TestModuleCannotTakeAllInstances(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		const slots, toolQueue = 8, 2
		pol := &host.Policy{Defaults: short(), MaxInstances: slots, Modules: map[string]host.ModulePolicy{
			"elicitwait": {Tools: map[string]host.ToolPolicy{"ask": {MaxQueue: toolQueue}}},
		}}
		hostile(t, e, pol, "elicitwait", func(t *testing.T, s *host.Server) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const calls, running = slots/4 + toolQueue + 1, slots / 4
			entered := make(chan struct{}, calls)
			errc := make(chan error, calls)
			for range calls {
				go func() {
					_, err := s.Call(ctx, "ask", nil, blockingElicit(entered))
					errc <- err
				}()
			}
			for range running {
				<-entered
			}
			// The one call beyond the tool's queue is refused: the others
			// are running or queued, and stay so until the cancel.
			if err := <-errc; !errors.Is(err, host.ErrBusy) || !strings.Contains(err.Error(), "2 calls running and 2 waiting") {
				t.Errorf("a call beyond the queue: got %v, want ErrBusy with 2 running and 2 waiting", err)
			}
			stillServes(t, s) // another module, within the server's slots
			if len(entered) != 0 || len(errc) != 0 {
				t.Errorf("beyond the module's %d calls: %d more entered, %d more ended", running, len(entered), len(errc))
			}
			cancel()
			for range calls - 1 {
				if err := <-errc; !errors.Is(err, context.Canceled) {
					t.Errorf("a running or queued call after the cancel: got %v, want context.Canceled", err)
				}
			}
		})
	})
}

// TestMemoryBudget: the server's memory budget holds calls back while the
// memory they reserve is taken, admits them when it frees, and fails at
// once, with a clear tool error and a problem, a tool whose one call could
// never fit.
func TestMemoryBudget(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		// short() gives 16 MiB and small buffers, so a call reserves 17 MiB:
		// two fit in 40.
		const budget, fit = 40, 2
		pol := &host.Policy{Defaults: short(), MemoryBudgetMiB: budget, Modules: map[string]host.ModulePolicy{
			// The whole budget: the module's default share, a quarter,
			// would hold the second call back before the server's does.
			"elicitwait": {MaxMemoryMiB: budget, Tools: map[string]host.ToolPolicy{"ask": {MaxQueue: 1}}},
			"state":      {Tools: map[string]host.ToolPolicy{"count": {MemoryMiB: 64}}},
		}}
		wasm(t, "elicitwait")
		wasm(t, "normal")
		wasm(t, "state")
		watchBaseline(t)
		s := newServer(t, e.interpreter, pol, "elicitwait", "normal", "state")
		if ps := problemsText(s); !strings.Contains(ps, `tool "count": one call reserves 65 MiB, more than the server's memory budget of 40 MiB`) {
			t.Errorf("problems:\n%swant one saying count cannot fit the budget", ps)
		}
		if l := s.Limits(); l.MemoryBudgetMiB != budget {
			t.Errorf("Limits().MemoryBudgetMiB = %d, want %d", l.MemoryBudgetMiB, budget)
		}

		// Two calls run and take the budget; then one waits for memory
		// and one is refused by the queue. The two later calls have a
		// context of their own, so the first two can end alone.
		first, endFirst := context.WithCancel(context.Background())
		defer endFirst()
		later, endLater := context.WithCancel(context.Background())
		defer endLater()
		entered := make(chan struct{}, fit+2)
		errFirst, errLater := make(chan error, fit), make(chan error, 2)
		ask := func(ctx context.Context, errc chan<- error) {
			_, err := s.Call(ctx, "ask", nil, blockingElicit(entered))
			errc <- err
		}
		for range fit {
			go ask(first, errFirst)
		}
		for range fit {
			<-entered
		}
		go ask(later, errLater)
		go ask(later, errLater)
		if err := <-errLater; !errors.Is(err, host.ErrBusy) || !strings.Contains(err.Error(), "2 calls running and 1 waiting") {
			t.Errorf("a call beyond the queue: got %v, want ErrBusy with 2 running and 1 waiting", err)
		}
		if len(entered) != 0 {
			t.Errorf("%d calls entered beyond the %d the budget holds", len(entered), fit)
		}

		// Never fits: refused at once, worded for the client.
		_, err := s.Call(context.Background(), "count", nil, nil)
		if !errors.Is(err, host.ErrMemoryBudget) {
			t.Errorf("count (65 MiB of a 40 MiB budget): got %v, want ErrMemoryBudget", err)
		}
		got, isErr := openSession(t, s).tool("count", nil)
		if want := `tool "count" cannot run on this server: one call reserves 65 MiB, more than the server's memory budget of 40 MiB`; !isErr || got != want {
			t.Errorf("count over MCP: got %q (isError %v), want the tool error %q", got, isErr, want)
		}

		// Memory frees: the waiting call is admitted.
		endFirst()
		for range fit {
			if err := <-errFirst; !errors.Is(err, context.Canceled) {
				t.Errorf("a running call after its cancel: got %v, want context.Canceled", err)
			}
		}
		<-entered
		endLater()
		if err := <-errLater; !errors.Is(err, context.Canceled) {
			t.Errorf("the call that waited for memory, after its cancel: got %v, want context.Canceled", err)
		}
		stillServes(t, s)
	})
}
