package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// The cases of this file call one hostile tool at a time through
// Server.Call, the path MCP's tools/call takes, on both engines.

func TestInfiniteLoop(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		t.Run("timeout", func(t *testing.T) {
			hostile(t, e, toolPolicy("spin", "spin", host.ToolPolicy{Timeout: runaway}), "spin", func(t *testing.T, s *host.Server) {
				_, err := s.Call(context.Background(), "spin", nil, nil)
				guestErr(t, err, host.KindTimeout, `module "spin" tool "spin"`, "exceeded 200ms")
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("errors.Is(%v, context.DeadlineExceeded) = false, want true", err)
				}
			})
		})
		t.Run("cancel", func(t *testing.T) {
			// Tool loop logs, then loops: the cancel comes from its log, so
			// it meets a running loop. The timeout is the default (30s):
			// only the cancel can end the call.
			hostile(t, e, policy(nil), "spin", func(t *testing.T, s *host.Server) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				_, err := s.Call(ctx, "loop", nil, &events{onLog: func(string) { cancel() }})
				guestErr(t, err, host.KindCanceled, "context canceled")
				if !errors.Is(err, context.Canceled) {
					t.Errorf("errors.Is(%v, context.Canceled) = false, want true", err)
				}
			})
		})
	})
}

// TestBulkLoops: a loop around one bulk instruction over all of a 4 MiB
// memory or a 65,536-entry table stops at its timeout and at a cancel,
// like a plain loop: the host charges a bulk instruction by its length, in
// steps, and checks its fuel between them. Charged one unit each, these
// loops ran for tens of seconds past both (the default timeout of the
// cancel case is 30 s: only the cancel or the fuel check can end it).
func TestBulkLoops(t *testing.T) {
	tools := []string{"fill", "copy", "table", "tcopy"}
	onEngines(t, func(t *testing.T, e engine) {
		for _, tool := range tools {
			t.Run(tool+"/timeout", func(t *testing.T) {
				hostile(t, e, toolPolicy("bulkspin", tool, host.ToolPolicy{Timeout: runaway}), "bulkspin", func(t *testing.T, s *host.Server) {
					_, err := s.Call(context.Background(), tool, nil, nil)
					guestErr(t, err, host.KindTimeout, "exceeded 200ms")
				})
			})
			t.Run(tool+"/cancel", func(t *testing.T) {
				hostile(t, e, policy(nil), "bulkspin", func(t *testing.T, s *host.Server) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					_, err := s.Call(ctx, tool, nil, &events{onLog: func(string) { cancel() }})
					guestErr(t, err, host.KindCanceled, "context canceled")
				})
			})
		}
	})
}

// TestShutdownStopsBulkLoops: a Shutdown whose drain time is over ends the
// calls left, bulk loops included (they used to run on for tens of
// seconds, and the process with them).
func TestShutdownStopsBulkLoops(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		wasm(t, "bulkspin")
		watchBaseline(t)
		s := newServer(t, e.interpreter, policy(nil), "bulkspin")
		started := make(chan struct{}, 4)
		errc := make(chan error, 4)
		for _, tool := range []string{"fill", "copy", "table", "tcopy"} {
			go func() {
				_, err := s.Call(context.Background(), tool, nil, &events{onLog: func(string) { started <- struct{}{} }})
				errc <- err
			}()
		}
		for range 4 {
			<-started
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no time to drain
		_ = s.Shutdown(ctx)
		for range 4 {
			guestErr(t, <-errc, host.KindCanceled, "the runtime was closed")
		}
	})
}

// TestStackOverflow: unbounded recursion ends the call out of memory (its
// frames are charged to the call's memory limit; the interpreter's own
// frame limit may come first), not a crash, before the (default) timeout.
// BenchmarkStackOverflow reports the host memory one overflow allocates.
func TestStackOverflow(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "recurse", func(t *testing.T, s *host.Server) {
			_, err := s.Call(context.Background(), "recurse", nil, nil)
			guestErr(t, err, host.KindOutOfMemory, "its call stack")
		})
	})
}

func TestMemoryBomb(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		for _, mib := range []int{4, 16} {
			t.Run(fmt.Sprintf("%dMiB", mib), func(t *testing.T) {
				pol := &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: mib}}
				hostile(t, e, pol, "membomb", func(t *testing.T, s *host.Server) {
					// The guest sees memory.grow return -1 and carries on,
					// holding the limit less what its instance and stack
					// take (a page or two for this module).
					got := text(t, s, "grow", "{}", nil)
					if pages, err := strconv.Atoi(got); err != nil || pages >= mib*16 || pages < mib*16-2 {
						t.Errorf("guest held %s pages when growth was refused, want %d or %d", got, mib*16-2, mib*16-1)
					}
					// A guest that fails after the refusal is out of memory.
					_, err := s.Call(context.Background(), "growtrap", nil, nil)
					guestErr(t, err, host.KindOutOfMemory, fmt.Sprintf("more than its memory limit of %d MiB", mib))
				})
			})
		}
	})
}

// TestInitialMemoryOverPolicy: a module whose initial memory exceeds what
// the policy gives its tools is a load problem, not a served module whose
// calls all fail, and runs where the policy grants enough, also above the
// default (a tool's own limit counts); one over the runtime's ceiling is a
// load problem whatever the policy. A module loaded under a limit that a
// later policy lowers is refused per call, before it runs.
func TestInitialMemoryOverPolicy(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		for _, tc := range []struct {
			name, module string
			pol          *host.Policy
			want         []string // nil: the call answers ok
		}{
			{"bigmem under 8 MiB", "bigmem", &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 8}},
				[]string{"memory limit of 8 MiB", "12.5 MiB of initial linear memory"}},
			{"bigmem under 16 MiB", "bigmem", &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 16}}, nil},
			{"bigdefault under the default", "bigdefault", nil, []string{"memory limit of 64 MiB", "96 MiB of initial linear memory"}},
			{"bigdefault under 16 MiB", "bigdefault", &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 16}},
				[]string{"memory limit of 16 MiB", "96 MiB of initial linear memory"}},
			{"bigdefault under 128 MiB", "bigdefault", &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 128}}, nil},
			{"bigdefault with a tool of 128 MiB", "bigdefault", toolPolicy("bigdefault", "bigdefault", host.ToolPolicy{MemoryMiB: 128}), nil},
			{"hugemem over the runtime ceiling", "hugemem", &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 256}},
				[]string{"memory limit of 256 MiB", "512 MiB of initial linear memory"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.want != nil {
					refusedAtLoad(t, e, tc.pol, map[string][]byte{tc.module: wasm(t, tc.module), "normal": wasm(t, "normal")}, tc.module, tc.want...)
					return
				}
				hostile(t, e, tc.pol, tc.module, func(t *testing.T, s *host.Server) {
					if got := text(t, s, tc.module, "{}", nil); got != "ok" {
						t.Errorf("%s: got %q, want ok", tc.module, got)
					}
				})
			})
		}
		t.Run("limit lowered after the load", func(t *testing.T) {
			hostile(t, e, &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 16}}, "bigmem", func(t *testing.T, s *host.Server) {
				if _, err := s.SetPolicy(&host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 8}}); err != nil {
					t.Fatal(err)
				}
				_, err := s.Call(context.Background(), "bigmem", nil, nil)
				guestErr(t, err, host.KindOutOfMemory, "memory limit of 8 MiB", "it starts with 12.5 MiB")
			})
		})
	})
}

// TestCallExplosion: an exponential call tree with no loop ends at the
// timeout (the host's fuel check runs at function entries as well as loop
// headers).
func TestCallExplosion(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, toolPolicy("explode", "explode", host.ToolPolicy{Timeout: runaway}), "explode", func(t *testing.T, s *host.Server) {
			_, err := s.Call(context.Background(), "explode", nil, nil)
			guestErr(t, err, host.KindTimeout, "exceeded 200ms")
		})
	})
}

// TestHugeOutput: endless stdout and a valid but oversized result are
// stopped by the output limit (the default timeout would be far later).
func TestHugeOutput(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "stdout", func(t *testing.T, s *host.Server) {
			for _, tool := range []string{"flood", "huge"} {
				t.Run(tool, func(t *testing.T) {
					_, err := s.Call(context.Background(), tool, nil, nil)
					guestErr(t, err, host.KindOutputTooLarge, "output exceeds 65536 bytes")
				})
			}
		})
	})
}

func TestHugeStderr(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "stderr", func(t *testing.T, s *host.Server) {
			t.Run("spew", func(t *testing.T) {
				ev := &events{}
				if got := text(t, s, "spew", "{}", ev); got != "ok" {
					t.Errorf("spew: got %q, want ok", got)
				}
				logged, notices := 0, 0
				for _, msg := range ev.logs {
					if strings.Contains(msg, "log limit reached") {
						notices++
						continue
					}
					logged += len(msg)
				}
				if max := 16 << 10; logged > max || logged == 0 {
					t.Errorf("16 MiB of stderr: %d bytes forwarded as log, want 1..%d", logged, max)
				}
				if notices != 1 {
					t.Errorf("got %d log-limit notices, want 1", notices)
				}
			})
			t.Run("spewtrap", func(t *testing.T) {
				_, err := s.Call(context.Background(), "spewtrap", nil, nil)
				ge := guestErr(t, err, host.KindTrap, "unreachable", "log line of sixty-three bytes")
				if n, max := len(ge.Stderr), 16<<10; n > max {
					t.Errorf("stderr tail kept: %d bytes, want at most MaxLogBytes %d", n, max)
				}
				if n := len(err.Error()); n > 4<<10 {
					t.Errorf("error message is %d bytes, want a bounded quote of stderr", n)
				}
			})
		})
	})
}

func TestBadOutput(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "badout", func(t *testing.T, s *host.Server) {
			for _, tc := range []struct{ tool, want string }{
				{"notjson", "not valid JSON"},
				{"shape", `"content" is a string, want an array`},
				{"nocontent", `missing "content" array`},
				{"two", "trailing data after the JSON value"},
				{"empty", "the module wrote nothing to stdout"},
				{"kind", `unknown type "exec"`},
				{"structured", "structuredContent is not a JSON object"},
			} {
				t.Run(tc.tool, func(t *testing.T) {
					_, err := s.Call(context.Background(), tc.tool, nil, nil)
					guestErr(t, err, host.KindBadOutput, `module "badout" tool "`+tc.tool+`": bad output: `, tc.want)
				})
			}
		})
	})
}

func TestTrapAfterPartialOutput(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "partial", func(t *testing.T, s *host.Server) {
			_, err := s.Call(context.Background(), "partial", nil, nil)
			ge := guestErr(t, err, host.KindTrap, "unreachable")
			if !strings.Contains(ge.Stderr, "about to trap") {
				t.Errorf("stderr tail %q, want the line written before the trap", ge.Stderr)
			}
			if strings.Contains(err.Error(), "half an ans") {
				t.Errorf("error %q quotes the partial stdout of a trapped call", err)
			}
		})
	})
}

func TestWildPointers(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "wild", func(t *testing.T, s *host.Server) {
			for _, tc := range []struct {
				tool string
				kind host.GuestErrorKind
				want string
			}{
				{"log", host.KindTrap, "wasmtask_v1.log: buffer [4294967040, 4294971136) is outside the module's memory (65536 bytes)"},
				{"progress", host.KindTrap, "wasmtask_v1.progress: buffer [65530, 65540) is outside"},
				{"status", host.KindTrap, "wasmtask_v1.status: buffer [0, 4294967295) is outside"},
				{"elicit", host.KindTrap, "wasmtask_v1.elicit: buffer [4294967295, 4294967297) is outside"},
				{"reply", host.KindTrap, "wasmtask_v1.reply: buffer [65000, 66000) is outside"},
				// WASI's own functions answer EFAULT (21) instead of trapping.
				{"fdwrite", host.KindExit, "exit code 21"},
			} {
				t.Run(tc.tool, func(t *testing.T) {
					_, err := s.Call(context.Background(), tc.tool, nil, accepting())
					guestErr(t, err, tc.kind, tc.want)
				})
			}
		})
	})
}

// TestForbiddenImports: modules whose imports the host does not provide
// are load problems naming the module and the import, and serve no tool;
// the server serves the rest.
func TestForbiddenImports(t *testing.T) {
	cases := []struct {
		module string
		is     error
		want   string
	}{
		{"import_foreign", host.ErrModuleABI, "imports env.system: the host provides only wasi_snapshot_preview1 and wasmtask_v1"},
		{"import_memory", host.ErrModuleABI, "imports memory env.memory: the host provides none"},
		{"import_sig", host.ErrModuleABI, "imports wasmtask_v1.log with type (i64) -> (), want (i32, i32, i32) -> ()"},
		{"import_unknown", host.ErrModuleABI, "imports wasmtask_v1.exec, which ABI v1 does not define (it has begin_task, elicit, elicit_all, log, progress, reply, roots, sample, status)"},
		{"import_v2", abi.ErrVersion, `this host speaks ABI v1 ("wasmtask_v1"): rebuild the module`},
		{"import_wasi", host.ErrModuleABI, "imports wasi_snapshot_preview1.sock_listen, which WASI preview1 does not define"},
	}
	onEngines(t, func(t *testing.T, e engine) {
		modules := []string{"normal"}
		for _, tc := range cases {
			modules = append(modules, tc.module)
		}
		for _, m := range modules {
			wasm(t, m)
		}
		watchBaseline(t)
		s := newServer(t, e.interpreter, nil, modules...)
		problems := map[string]host.Problem{}
		for _, p := range s.Problems() {
			problems[p.Module] = p
		}
		for _, tc := range cases {
			t.Run(tc.module, func(t *testing.T) {
				p, ok := problems[tc.module]
				if !ok {
					t.Fatalf("%s loaded without a problem, want a refusal", tc.module)
				}
				if tc.is != nil && !errors.Is(p.Err, tc.is) {
					t.Errorf("%s: got %v, want errors.Is %v", tc.module, p.Err, tc.is)
				}
				if !strings.Contains(p.Err.Error(), tc.want) || !strings.Contains(p.String(), tc.module) {
					t.Errorf("%s: got %q, want it to name the module and say %q", tc.module, p, tc.want)
				}
			})
		}
		if len(problems) != len(cases) {
			t.Errorf("got %d problems, want %d: %v", len(problems), len(cases), s.Problems())
		}
		if tools := s.Tools(); len(tools) != 1 || tools[0].Name != "echo" {
			t.Errorf("served tools %v, want only the normal module's echo", tools)
		}
		stillServes(t, s)
	})
}

func TestBlockedInElicit(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		t.Run("cancel", func(t *testing.T) {
			hostile(t, e, policy(nil), "elicitwait", func(t *testing.T, s *host.Server) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				entered := make(chan struct{}, 1)
				errc := make(chan error, 1)
				go func() {
					_, err := s.Call(ctx, "ask", nil, blockingElicit(entered))
					errc <- err
				}()
				<-entered
				cancel()
				guestErr(t, <-errc, host.KindCanceled, "context canceled")
			})
		})
		t.Run("timeout", func(t *testing.T) {
			hostile(t, e, toolPolicy("elicitwait", "ask", host.ToolPolicy{Timeout: runaway}), "elicitwait", func(t *testing.T, s *host.Server) {
				entered := make(chan struct{}, 1)
				_, err := s.Call(context.Background(), "ask", nil, blockingElicit(entered))
				guestErr(t, err, host.KindTimeout, "exceeded 200ms")
				if len(entered) != 1 {
					t.Errorf("the guest never reached elicit")
				}
			})
		})
	})
}

func TestNoStateBetweenCalls(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		// 16 concurrent calls: MaxConcurrency lets them all run at once.
		pol := toolPolicy("state", "count", host.ToolPolicy{MaxConcurrency: 16})
		hostile(t, e, pol, "state", func(t *testing.T, s *host.Server) {
			for i := range 5 {
				if got := text(t, s, "count", "{}", nil); got != "1 1" {
					t.Fatalf("call %d: global and memory counters %q, want \"1 1\" (a fresh instance)", i, got)
				}
			}
			var wg sync.WaitGroup
			got := make([]string, 16)
			for i := range got {
				wg.Go(func() {
					res, err := s.Call(context.Background(), "count", nil, nil)
					if err != nil {
						got[i] = err.Error()
						return
					}
					got[i] = res.Content[0].Text
				})
			}
			wg.Wait()
			for i, g := range got {
				if g != "1 1" {
					t.Errorf("concurrent call %d: got %q, want \"1 1\"", i, g)
				}
			}
		})
	})
}

// TestCallGates: Server.Call is admitted like tools/call. Calls beyond a
// tool's MaxConcurrency wait in a queue of MaxQueue and the rest fail at
// once with ErrBusy; the module's MaxInstances and the server-wide
// MaxInstances (queues of 4 × their slots) bound calls the same way. The
// calls block in elicit, so who runs and who waits cannot change until the
// test cancels them.
func TestCallGates(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		pol                    *host.Policy
		calls, running, queued int
		busy                   string
	}{
		{"tool", toolPolicy("elicitwait", "ask", host.ToolPolicy{MaxConcurrency: 1, MaxQueue: 1}), 6, 1, 1,
			"1 calls running and 1 waiting"},
		{"module", policy(map[string]host.ModulePolicy{"elicitwait": {MaxInstances: 1}}), 8, 1, 4,
			`module "elicitwait" instance limit: tool busy: 1 calls running and 4 waiting`},
		{"server", &host.Policy{Defaults: short(), MaxInstances: 1, Modules: map[string]host.ModulePolicy{"elicitwait": {MaxInstances: 2}}}, 8, 1, 4,
			"server-wide instance limit: tool busy: 1 calls running and 4 waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onEngines(t, func(t *testing.T, e engine) {
				hostile(t, e, tc.pol, "elicitwait", func(t *testing.T, s *host.Server) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					entered := make(chan struct{}, tc.calls)
					errc := make(chan error, tc.calls)
					for range tc.calls {
						go func() {
							_, err := s.Call(ctx, "ask", nil, blockingElicit(entered))
							errc <- err
						}()
					}
					for range tc.running {
						<-entered
					}
					for range tc.calls - tc.running - tc.queued {
						if err := <-errc; !errors.Is(err, host.ErrBusy) || !strings.Contains(err.Error(), tc.busy) {
							t.Errorf("a call beyond the gate: got %v, want ErrBusy saying %q", err, tc.busy)
						}
					}
					// Now tc.running calls block in elicit and tc.queued wait:
					// none can end or enter before the cancel.
					if len(entered) != 0 || len(errc) != 0 {
						t.Errorf("beyond %d running calls: %d more entered, %d more ended", tc.running, len(entered), len(errc))
					}
					cancel()
					for range tc.running + tc.queued {
						if err := <-errc; !errors.Is(err, context.Canceled) {
							t.Errorf("a running or queued call after the cancel: got %v, want context.Canceled", err)
						}
					}
				})
			})
		})
	}
}
