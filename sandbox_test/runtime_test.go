package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

func TestInfiniteLoop(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name+"/timeout", func(t *testing.T) {
			hostile(t, e.interpreter, "spin", func(t *testing.T, m *host.Module) {
				_, err := m.Call(context.Background(), "spin", nil, host.CallOptions{Policy: short()})
				guestErr(t, err, host.KindTimeout, `module "spin" tool "spin"`, "exceeded 200ms")
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("errors.Is(%v, context.DeadlineExceeded) = false, want true", err)
				}
			})
		})
		t.Run(e.name+"/cancel", func(t *testing.T) {
			hostile(t, e.interpreter, "spin", func(t *testing.T, m *host.Module) {
				ctx, cancel := context.WithCancel(context.Background())
				stop := time.AfterFunc(50*time.Millisecond, cancel)
				defer stop.Stop()
				pol := short()
				pol.Timeout = host.Duration(time.Minute) // only the cancel can end it
				_, err := m.Call(ctx, "spin", nil, host.CallOptions{Policy: pol})
				guestErr(t, err, host.KindCanceled, "context canceled")
				if !errors.Is(err, context.Canceled) {
					t.Errorf("errors.Is(%v, context.Canceled) = false, want true", err)
				}
			})
		})
	}
}

func TestStackOverflow(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			hostile(t, e.interpreter, "recurse", func(t *testing.T, m *host.Module) {
				pol := short()
				pol.Timeout = host.Duration(20 * time.Second) // the stack limit must come first
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, err := m.Call(context.Background(), "recurse", nil, host.CallOptions{Policy: pol})
				runtime.ReadMemStats(&after)
				guestErr(t, err, host.KindTrap, "stack overflow")
				// The guest's stack is host memory, outside the policy's
				// linear memory limit: record how much one call allocated.
				t.Logf("%s: one stack overflow allocated %d MiB of host memory (TotalAlloc delta)",
					e.name, (after.TotalAlloc-before.TotalAlloc)>>20)
			})
		})
	}
}

func TestMemoryBomb(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			hostile(t, e.interpreter, "membomb", func(t *testing.T, m *host.Module) {
				for _, mib := range []int{4, 16} {
					pol := short()
					pol.MemoryMiB = mib
					pol.Timeout = host.Duration(10 * time.Second) // growth is slow under -race
					// The guest sees memory.grow return -1 and carries on.
					if got, want := text(t, m, "grow", "{}", host.CallOptions{Policy: pol}), fmt.Sprint(mib*16); got != want {
						t.Errorf("MemoryMiB %d: guest held %s pages when growth was refused, want %s", mib, got, want)
					}
					// A guest that fails after the refusal is out of memory.
					_, err := m.Call(context.Background(), "growtrap", nil, host.CallOptions{Policy: pol})
					guestErr(t, err, host.KindOutOfMemory, fmt.Sprintf("more than its limit of %d pages (%d MiB)", mib*16, mib))
				}
			})
		})
	}
}

func TestInitialMemoryOverPolicy(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			hostile(t, e.interpreter, "bigmem", func(t *testing.T, m *host.Module) {
				pol := short()
				pol.MemoryMiB = 8
				_, err := m.Call(context.Background(), "bigmem", nil, host.CallOptions{Policy: pol})
				guestErr(t, err, host.KindOutOfMemory, "limit of 128 pages (8 MiB)", "it starts with 200 pages")
				pol.MemoryMiB = 16
				if got := text(t, m, "bigmem", "{}", host.CallOptions{Policy: pol}); got != "ok" {
					t.Errorf("bigmem with 16 MiB: got %q, want ok", got)
				}
			})
		})
	}
	// A module that starts with more than the default memory loads (its
	// describe gets its initial memory) and runs only where the policy
	// grants that much.
	t.Run("over the default, granted by policy", func(t *testing.T) {
		hostile(t, false, "bigdefault", func(t *testing.T, m *host.Module) {
			_, err := m.Call(context.Background(), "bigdefault", nil, host.CallOptions{Policy: short()})
			guestErr(t, err, host.KindOutOfMemory, "limit of 256 pages (16 MiB)", "it starts with 1536 pages")
			pol := short()
			pol.MemoryMiB = 128
			if got := text(t, m, "bigdefault", "{}", host.CallOptions{Policy: pol}); got != "ok" {
				t.Errorf("bigdefault with 128 MiB: got %q, want ok", got)
			}
		})
	})
	t.Run("over the runtime ceiling", func(t *testing.T) {
		rt := newRuntime(t, false)
		_, err := rt.Load(context.Background(), "hugemem", wasmFile(t, "hugemem"))
		guestErr(t, err, host.KindOutOfMemory, `load "hugemem": describe failed`, "it starts with 8192 pages")
		stillServes(t, rt)
	})
}

func TestCallExplosion(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			hostile(t, e.interpreter, "explode", func(t *testing.T, m *host.Module) {
				_, err := m.Call(context.Background(), "explode", nil, host.CallOptions{Policy: short()})
				guestErr(t, err, host.KindTimeout, "exceeded 200ms")
			})
		})
	}
}

func TestHugeOutput(t *testing.T) {
	for _, tool := range []string{"flood", "huge"} {
		t.Run(tool, func(t *testing.T) {
			hostile(t, false, "stdout", func(t *testing.T, m *host.Module) {
				pol := short()
				pol.Timeout = host.Duration(20 * time.Second) // the output limit must stop it, not the clock
				_, err := m.Call(context.Background(), tool, nil, host.CallOptions{Policy: pol})
				guestErr(t, err, host.KindOutputTooLarge, "output exceeds 65536 bytes")
			})
		})
	}
}

func TestHugeStderr(t *testing.T) {
	t.Run("spew", func(t *testing.T) {
		hostile(t, false, "stderr", func(t *testing.T, m *host.Module) {
			var mu sync.Mutex
			var logged, notices int
			opts := host.CallOptions{Policy: short(), OnLog: func(level int32, msg string) {
				mu.Lock()
				defer mu.Unlock()
				if strings.Contains(msg, "log limit reached") {
					notices++
					return
				}
				logged += len(msg)
			}}
			opts.Policy.Timeout = host.Duration(20 * time.Second)
			if got := text(t, m, "spew", "{}", opts); got != "ok" {
				t.Errorf("spew: got %q, want ok", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if max := 16 << 10; logged > max || logged == 0 {
				t.Errorf("16 MiB of stderr: %d bytes forwarded to OnLog, want 1..%d", logged, max)
			}
			if notices != 1 {
				t.Errorf("got %d log-limit notices, want 1", notices)
			}
		})
	})
	t.Run("spewtrap", func(t *testing.T) {
		hostile(t, false, "stderr", func(t *testing.T, m *host.Module) {
			_, err := m.Call(context.Background(), "spewtrap", nil, host.CallOptions{Policy: short()})
			ge := guestErr(t, err, host.KindTrap, "unreachable", "log line of sixty-three bytes")
			if n, max := len(ge.Stderr), 16<<10; n > max {
				t.Errorf("stderr tail kept: %d bytes, want at most MaxLogBytes %d", n, max)
			}
			if n := len(err.Error()); n > 4<<10 {
				t.Errorf("error message is %d bytes, want a bounded quote of stderr", n)
			}
		})
	})
}

func TestBadOutput(t *testing.T) {
	hostile(t, false, "badout", func(t *testing.T, m *host.Module) {
		for _, tc := range []struct{ tool, want string }{
			{"notjson", "invalid character"},
			{"shape", "cannot unmarshal string"},
			{"nocontent", `missing "content" array`},
			{"two", "trailing data after the JSON value"},
			{"empty", "the module wrote nothing to stdout"},
			{"kind", `unknown type "exec"`},
			{"structured", "structuredContent is not a JSON object"},
		} {
			t.Run(tc.tool, func(t *testing.T) {
				_, err := m.Call(context.Background(), tc.tool, nil, host.CallOptions{Policy: short()})
				guestErr(t, err, host.KindBadOutput, "invalid result", tc.want)
			})
		}
	})
}

func TestTrapAfterPartialOutput(t *testing.T) {
	hostile(t, false, "partial", func(t *testing.T, m *host.Module) {
		_, err := m.Call(context.Background(), "partial", nil, host.CallOptions{Policy: short()})
		ge := guestErr(t, err, host.KindTrap, "unreachable")
		if !strings.Contains(ge.Stderr, "about to trap") {
			t.Errorf("stderr tail %q, want the line written before the trap", ge.Stderr)
		}
		if strings.Contains(err.Error(), "half an ans") {
			t.Errorf("error %q quotes the partial stdout of a trapped call", err)
		}
	})
}

func TestWildPointers(t *testing.T) {
	hostile(t, false, "wild", func(t *testing.T, m *host.Module) {
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
				opts := host.CallOptions{Policy: short(), OnProgress: func(float64, float64, string) {},
					Elicit: func(context.Context, abi.ElicitRequest) (abi.ElicitReply, error) {
						return abi.ElicitReply{Action: "accept"}, nil
					}}
				_, err := m.Call(context.Background(), tc.tool, nil, opts)
				guestErr(t, err, tc.kind, tc.want)
			})
		}
	})
}

func TestForbiddenImports(t *testing.T) {
	rt := newRuntime(t, false)
	for _, tc := range []struct {
		module string
		is     error
		want   string
	}{
		{"import_unknown", host.ErrModuleABI, "imports wasmtask_v1.exec, which ABI v1 does not define (it has elicit, log, progress, reply, status)"},
		{"import_foreign", host.ErrModuleABI, "imports env.system: the host provides only wasi_snapshot_preview1 and wasmtask_v1"},
		{"import_sig", host.ErrModuleABI, "imports wasmtask_v1.log with type (i64) -> (), want (i32, i32, i32) -> ()"},
		{"import_v2", abi.ErrVersion, `this host speaks ABI v1 ("wasmtask_v1"): rebuild the module`},
		{"import_memory", host.ErrModuleABI, "imports memory env.memory: the host provides none"},
		{"import_wasi", nil, `"sock_listen" is not exported in module "wasi_snapshot_preview1"`},
	} {
		t.Run(tc.module, func(t *testing.T) {
			_, err := rt.Load(context.Background(), tc.module, wasmFile(t, tc.module))
			if err == nil {
				t.Fatalf("Load %s: got no error, want a refusal", tc.module)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Load %s: got %v, want errors.Is %v", tc.module, err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.module) {
				t.Errorf("Load %s: got %q, want it to name the module and say %q", tc.module, err, tc.want)
			}
		})
	}
	stillServes(t, rt)
}

// blockingElicit returns an Elicit handler that signals entered and then
// waits for its context, as a user who never answers.
func blockingElicit(entered chan<- struct{}) func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	return func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return abi.ElicitReply{}, ctx.Err()
	}
}

func TestBlockedInElicit(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name+"/cancel", func(t *testing.T) {
			hostile(t, e.interpreter, "elicitwait", func(t *testing.T, m *host.Module) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				entered := make(chan struct{}, 1)
				errc := make(chan error, 1)
				pol := short()
				pol.Timeout = host.Duration(time.Minute)
				go func() {
					_, err := m.Call(ctx, "ask", nil, host.CallOptions{Policy: pol, Elicit: blockingElicit(entered)})
					errc <- err
				}()
				<-entered
				cancel()
				guestErr(t, <-errc, host.KindCanceled, "context canceled")
			})
		})
		t.Run(e.name+"/timeout", func(t *testing.T) {
			hostile(t, e.interpreter, "elicitwait", func(t *testing.T, m *host.Module) {
				entered := make(chan struct{}, 1)
				_, err := m.Call(context.Background(), "ask", nil, host.CallOptions{Policy: short(), Elicit: blockingElicit(entered)})
				guestErr(t, err, host.KindTimeout, "exceeded 200ms")
				if len(entered) != 1 {
					t.Errorf("the guest never reached elicit")
				}
			})
		})
	}
}

func TestNoStateBetweenCalls(t *testing.T) {
	hostile(t, false, "state", func(t *testing.T, m *host.Module) {
		for i := range 5 {
			if got := text(t, m, "count", "{}", host.CallOptions{}); got != "1 1" {
				t.Fatalf("call %d: global and memory counters %q, want \"1 1\" (a fresh instance)", i, got)
			}
		}
		var wg sync.WaitGroup
		got := make([]string, 16)
		for i := range got {
			wg.Go(func() {
				res, err := m.Call(context.Background(), "count", nil, host.CallOptions{})
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
}

// TestRuntimeHasNoGate pins down that the Runtime facade does not apply
// MaxConcurrency/MaxQueue (documented on CallOptions.Policy): its callers
// bound their own calls; the Server's registry is the gated path.
func TestRuntimeHasNoGate(t *testing.T) {
	hostile(t, false, "elicitwait", func(t *testing.T, m *host.Module) {
		const n = 6
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		entered := make(chan struct{}, n)
		pol := short()
		pol.Timeout = host.Duration(time.Minute)
		pol.MaxConcurrency, pol.MaxQueue = 1, 1
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				_, _ = m.Call(ctx, "ask", json.RawMessage(`{}`), host.CallOptions{Policy: pol, Elicit: blockingElicit(entered)})
			})
		}
		for range n {
			<-entered // all n run at once despite MaxConcurrency 1
		}
		cancel()
		wg.Wait()
	})
}
