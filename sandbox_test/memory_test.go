package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// The cases of this file make the host allocate outside linear memory:
// the guest's call stack, function references, tables and globals. A
// tool's MemoryMiB covers them all; past it the call fails out of memory
// and the server goes on. BenchmarkPeakRSS measures the peak RSS of each
// case over its grant.

// TestStackBomb: deep recursion through big frames, function references
// made in a loop, and recursion after memory growth end out of memory on
// both engines (the interpreter's own frame limit may come first: also out
// of memory); a stack that grew once stays charged, so that memory growth
// after it gets less.
func TestStackBomb(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "stackbomb", func(t *testing.T, s *host.Server) {
			for _, tool := range []string{"frames", "refs", "growdeep"} {
				_, err := s.Call(context.Background(), tool, nil, nil)
				want := "its call stack"
				if tool == "refs" {
					want = "more than its memory limit of 16 MiB"
				}
				guestErr(t, err, host.KindOutOfMemory, want)
			}
			plain := pages(t, s, "plaingrow")
			afterDeep := pages(t, s, "deepgrow")
			if plain >= 16*16 || afterDeep >= plain {
				t.Errorf("pages held after growth: %d alone, %d after a deep recursion; want fewer than %d, and fewer after the recursion", plain, afterDeep, 16*16)
			}
		})
	})
}

func pages(t *testing.T, s *host.Server, tool string) int {
	t.Helper()
	got := text(t, s, tool, "{}", nil)
	n, err := strconv.Atoi(got)
	if err != nil {
		t.Fatalf("%s answered %q, want a number of pages", tool, got)
	}
	return n
}

// TestTableBomb: tables count at their maximum (the host bounds it) against
// the tool's memory: under 8 MiB the module cannot run and is a load
// problem, under 16 MiB it grows its tables to the bound and answers.
func TestTableBomb(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		t.Run("8MiB", func(t *testing.T) {
			refusedAtLoad(t, e, &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 8}},
				map[string][]byte{"tablebomb": wasm(t, "tablebomb"), "normal": wasm(t, "normal")}, "tablebomb",
				"more than the memory limit of 8 MiB", "13.56 MiB for tables, globals and the instance")
		})
		t.Run("16MiB", func(t *testing.T) {
			hostile(t, e, policy(nil), "tablebomb", func(t *testing.T, s *host.Server) {
				// 8 tables of 32768 entries, each allowed 65536 more.
				if got, want := text(t, s, "grow", "{}", nil), fmt.Sprint(8*(32768+65536)); got != want {
					t.Errorf("table entries after growth: got %s, want %s", got, want)
				}
			})
		})
	})
}

// TestManyGlobals: 50000 globals (about 5 MB of host memory per instance)
// count against the tool's memory: under 4 MiB the module cannot run and
// is a load problem, under 16 MiB it runs.
func TestManyGlobals(t *testing.T) {
	mod := manyGlobals(t)
	onEngines(t, func(t *testing.T, e engine) {
		t.Run("4MiB", func(t *testing.T) {
			refusedAtLoad(t, e, &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 4}},
				map[string][]byte{"manyglobals": mod, "normal": wasm(t, "normal")}, "manyglobals",
				"more than the memory limit of 4 MiB", "4.641 MiB for tables, globals and the instance")
		})
		t.Run("16MiB", func(t *testing.T) {
			wasm(t, "normal")
			watchBaseline(t)
			s := serveWasm(t, e.interpreter, &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 16}},
				map[string][]byte{"manyglobals": mod, "normal": wasm(t, "normal")})
			if _, err := s.Call(context.Background(), "touch", nil, nil); err != nil {
				t.Fatalf("touch under 16 MiB: %v", err)
			}
			stillServes(t, s)
		})
	})
}

// manyGlobalsCount is how many globals manyGlobals adds to
// testdata/manyglobals.wat.
const manyGlobalsCount = 50000

// manyGlobals builds testdata/manyglobals.wat with manyGlobalsCount
// globals at its marker line.
func manyGlobals(tb testing.TB) []byte {
	tb.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "manyglobals.wat"))
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for range manyGlobalsCount {
		b.WriteString("  (global (mut i64) (i64.const 0))\n")
	}
	out := strings.Replace(string(src), "  ;; @GLOBALS@\n", b.String(), 1)
	path := filepath.Join(tb.TempDir(), "manyglobals.wat")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		tb.Fatal(err)
	}
	return hosttest.Wasm(tb, path)
}

// serveWasm is serve for modules given as bytes, by module name.
func serveWasm(tb testing.TB, interpreter bool, pol *host.Policy, mods map[string][]byte) *host.Server {
	tb.Helper()
	fsys := fstest.MapFS{}
	for name, b := range mods {
		fsys[name+".wasm"] = &fstest.MapFile{Data: b}
	}
	s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Policy: pol, Interpreter: interpreter})
	if err != nil {
		tb.Fatalf("host.New: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	if p := s.Problems(); len(p) > 0 {
		tb.Fatalf("modules not served: %v", p)
	}
	return s
}

// peakCases are the cases of BenchmarkPeakRSS: the heaviest guest of each
// kind at a grant it fills.
var peakCases = []struct {
	name, module, tool string
	mib                int
}{
	{"linear memory to the limit", "stackbomb", "plaingrow", 64},
	{"recursion, small frames", "recurse", "recurse", 64},
	{"recursion, big frames", "stackbomb", "frames", 64},
	{"function references", "stackbomb", "refs", 64},
	{"memory, then recursion", "stackbomb", "growdeep", 64},
	{"recursion, then memory", "stackbomb", "deepgrow", 64},
	{"tables to their bound", "tablebomb", "grow", 16},
	{"50000 globals", "manyglobals", "touch", 16},
}

// BenchmarkPeakRSS reports, for each case and engine, how far the peak
// resident memory of a process running one call of the case rises over
// the memory the policy grants the tool (MiB; negative: under it). Each
// measurement runs in a fresh process (TestPeakRSSChild), so that no
// other case's memory is counted: the child starts a server, collects
// garbage, resets the kernel's peak (VmHWM, /proc/self/clear_refs) and
// reads it after the call. Linux only. Run it with
//
//	go test -run '^$' -bench PeakRSS -benchtime 1x ./sandbox_test/
func BenchmarkPeakRSS(b *testing.B) {
	needsProc(b)
	for _, e := range engines {
		for _, c := range peakCases {
			b.Run(e.name+"/"+c.name, func(b *testing.B) {
				var over float64
				for b.Loop() {
					f := measureInChild(b, "TestPeakRSSChild", c.name, e.name)
					over = float64(field(b, f, 1)-field(b, f, 0)-int64(c.mib)<<20) / (1 << 20)
				}
				b.ReportMetric(over, "MiB-over-grant")
			})
		}
	}
}

// TestPeakRSSChild is one measurement of BenchmarkPeakRSS; it does nothing
// unless the benchmark started it.
func TestPeakRSSChild(t *testing.T) {
	name, interpreter := childCase(t)
	for _, c := range peakCases {
		if c.name != name {
			continue
		}
		mod := wasm(t, c.module)
		if c.module == "manyglobals" {
			mod = manyGlobals(t)
		}
		s := serveWasm(t, interpreter, &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: c.mib}}, map[string][]byte{c.module: mod})
		base := resetPeak(t)
		_, err := s.Call(context.Background(), c.tool, nil, nil)
		report(base, peakRSS(t))
		t.Logf("call: %v", err)
		return
	}
	t.Fatalf("unknown case %q", name)
}
