package sandbox_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// The cases of this file are modules whose load would make the host
// allocate or compute far more than the operator allows: each is refused
// at load, before the step that would spend it, with a problem that names
// the bound, and the host allocates a bounded amount while it refuses it.
// Most are too large to write as WAT and are generated here.

// wasmBuilder writes a module section by section.
type wasmBuilder []byte

func newWasm() wasmBuilder { return wasmBuilder{0, 'a', 's', 'm', 1, 0, 0, 0} }

// section appends section id with payload.
func (w wasmBuilder) section(id byte, payload []byte) wasmBuilder {
	w = append(w, id)
	w = binary.AppendUvarint(w, uint64(len(payload)))
	return append(w, payload...)
}

// vector is a vector of n entries encoded in items.
func vector(n int, items []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(n)), items...)
}

// command is a module of type () -> (), one memory page exported as
// "memory", functions whose bodies are bodies (the first exported as
// _start), and the sections of extra, by id, at their place.
func command(bodies [][]byte, extra map[byte][]byte) []byte {
	w := newWasm().section(1, vector(1, []byte{0x60, 0, 0}))
	w = w.section(3, vector(len(bodies), make([]byte, len(bodies))))
	if p, ok := extra[4]; ok {
		w = w.section(4, p)
	}
	w = w.section(5, vector(1, []byte{0x00, 0x01}))
	if p, ok := extra[6]; ok {
		w = w.section(6, p)
	}
	w = w.section(7, vector(2, append(append([]byte{6}, "_start"...), 0x00, 0x00, 6, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00)))
	if p, ok := extra[9]; ok {
		w = w.section(9, p)
	}
	var code []byte
	for _, b := range bodies {
		code = binary.AppendUvarint(code, uint64(len(b)))
		code = append(code, b...)
	}
	w = w.section(10, vector(len(bodies), code))
	if p, ok := extra[11]; ok {
		w = w.section(11, p)
	}
	return w
}

var emptyBody = []byte{0x00, 0x0b}

// globalsModule defines n mutable i32 globals (5 bytes each).
func globalsModule(n int) []byte {
	g := make([]byte, 0, 5*n)
	for range n {
		g = append(g, 0x7f, 0x01, 0x41, 0x00, 0x0b)
	}
	return command([][]byte{emptyBody}, map[byte][]byte{6: vector(n, g)})
}

// functionsModule defines n empty functions (4 bytes each).
func functionsModule(n int) []byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = emptyBody
	}
	return command(bodies, nil)
}

// locals appends a local declaration of n i32 locals to b.
func locals(b []byte, n int) []byte {
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(n))
	return append(b, 0x7f)
}

// liveAcrossLoops is the body of a function whose n locals all live across
// loops sequential loops (each reads one local and writes another; all are
// read at the end): every loop header then joins every local, the worst
// shape for wazero's compiler (10,000 locals across 100 loops, 41 KB,
// compiled for a minute).
func liveAcrossLoops(n, loops int) []byte {
	b := locals(nil, n)
	for i := range loops {
		b = append(b, 0x03, 0x40, 0x20)
		b = binary.AppendUvarint(b, uint64(i%n))
		b = append(b, 0x21)
		b = binary.AppendUvarint(b, uint64((i*7+1)%n))
		b = append(b, 0x41, 0x00, 0x0d, 0x00, 0x0b) // br_if 0 (i32.const 0); end
	}
	for i := range n {
		b = append(b, 0x20)
		b = binary.AppendUvarint(b, uint64(i))
		b = append(b, 0x1a)
	}
	return append(b, 0x0b)
}

// brTableSelect is the body of a function of n locals, a br_table to each
// of targets nested blocks, and at each block's end a select between two
// locals written to a third: every edge of the table carries every local.
func brTableSelect(n, targets int) []byte {
	b := locals(nil, n)
	for range targets {
		b = append(b, 0x02, 0x40)
	}
	b = append(b, 0x41, 0x00, 0x0e)
	b = binary.AppendUvarint(b, uint64(targets-1))
	for i := range targets {
		b = binary.AppendUvarint(b, uint64(i))
	}
	for i := range targets {
		b = append(b, 0x0b, 0x20)
		b = binary.AppendUvarint(b, uint64(i%n))
		b = append(b, 0x20)
		b = binary.AppendUvarint(b, uint64((i+1)%n))
		b = append(b, 0x20)
		b = binary.AppendUvarint(b, uint64((i+2)%n))
		b = append(b, 0x1b, 0x21) // select; local.set
		b = binary.AppendUvarint(b, uint64((i+3)%n))
	}
	for i := range n {
		b = append(b, 0x20)
		b = binary.AppendUvarint(b, uint64(i))
		b = append(b, 0x1a)
	}
	return append(b, 0x0b)
}

// nestedLoops is the body of a function of n locals in loops nested
// depth deep: the dominator tree as deep as the loops, the shape that costs
// wazero's loop detection most per block.
func nestedLoops(n, depth int) []byte {
	b := locals(nil, n)
	for range depth {
		b = append(b, 0x03, 0x40)
	}
	for i := range n {
		b = append(b, 0x20)
		b = binary.AppendUvarint(b, uint64(i))
		b = append(b, 0x21)
		b = binary.AppendUvarint(b, uint64((i+1)%n))
	}
	for range depth {
		b = append(b, 0x41, 0x00, 0x0d, 0x00, 0x0b)
	}
	return append(b, 0x0b)
}

// passiveElements is a module with one passive element segment of n
// entries (one byte each) and a table for them.
func passiveElements(n int) []byte {
	e := binary.AppendUvarint([]byte{0x01, 0x00}, uint64(n)) // passive, funcref indices
	e = append(e, make([]byte, n)...)                        // function 0, n times
	return command([][]byte{emptyBody}, map[byte][]byte{
		4: vector(1, []byte{0x70, 0x00, 0x01}),
		9: vector(1, e),
	})
}

// dataSegments is a module of n active one-byte data segments, 2 KiB
// apart (so that no merge can join them).
func dataSegments(n int) []byte {
	var d []byte
	for i := range n {
		d = append(d, 0x00, 0x41)
		d = appendSleb(d, int64(i*2048%65000))
		d = append(d, 0x0b, 0x01, 0x01)
	}
	return command([][]byte{emptyBody}, map[byte][]byte{11: vector(n, d)})
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// loadCase is a module whose load passes a bound.
type loadCase struct {
	name      string
	wasm      []byte
	pol       *host.Policy // nil: the defaults
	is        error
	fragments []string
}

// loadCases are the classes of load cost, each past its bound.
func loadCases() []loadCase {
	small := &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 2}}
	return []loadCase{
		{"a million globals", globalsModule(1_000_000), small, host.ErrLoadLimit,
			[]string{"global section", "its compile may cost as much as 61.04 MiB of code, more than the limit of 32 MiB"}},
		{"globals past the memory limit", globalsModule(100_000), small, host.ErrLoadLimit,
			[]string{"one instance needs", "9.218 MiB for tables, globals and the instance", "more than the memory limit of 2 MiB"}},
		{"100,000 functions", functionsModule(100_000), nil, host.ErrLoadLimit,
			[]string{"function section", "more than the limit of 32 MiB"}},
		{"10,000 locals across 100 loops", command([][]byte{liveAcrossLoops(10_000, 100)}, nil), nil, host.ErrLoadLimit,
			[]string{"function 0", "10001 locals and parameters across 404 blocks and loops", "values for the compiler, more than 131072"}},
		{"30 locals across 3,000 loops", command([][]byte{liveAcrossLoops(30, 3000)}, nil), nil, host.ErrLoadLimit,
			[]string{"function 0", "31 locals and parameters across 12004 blocks and loops", "values for the compiler, more than 131072"}},
		{"30 locals across 1,050 loops", command([][]byte{liveAcrossLoops(30, 1050)}, nil), nil, host.ErrLoadLimit,
			[]string{"function 0", "its compile may cost as much as 8.679 MiB of code", "more than the 8 MiB one function may"}},
		{"many small loop nests", command(repeat(liveAcrossLoops(30, 900), 8), nil), nil, host.ErrLoadLimit,
			[]string{"the module's compile may cost as much as", "more than the limit of 32 MiB"}},
		{"br_table and select over 1,000 locals", command([][]byte{brTableSelect(1000, 1000)}, nil), nil, host.ErrLoadLimit,
			[]string{"function 0", "values for the compiler"}},
		{"4 MiB of passive element entries", passiveElements(4 << 20), nil, host.ErrLoadLimit,
			[]string{"element section", "more than the limit of 32 MiB"}},
		{"1.2 million data segments", dataSegments(1_200_000), nil, host.ErrLoadLimit,
			[]string{"data section", "more than the limit of 32 MiB"}},
		// Counts that promise more entries than the bytes that follow:
		// wazero's decoder would allocate for them first (2^32 globals
		// ended the process), so they never reach it.
		{"2^32 globals in 13 bytes", newWasm().section(6, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}), nil, host.ErrCompile,
			[]string{"global section", "bad count"}},
		{"a 4 GiB data segment in 20 bytes", newWasm().section(11, []byte{1, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f}), nil, host.ErrCompile,
			[]string{"data section", "segment 0: 4294967295 bytes, more than the section holds"}},
	}
}

func repeat(b []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestLoadCostBounded: each module whose load would cost more than the
// bounds allow is a load problem of its own file naming the bound, refused
// before it is compiled — while the test refuses it, the process allocates
// a bounded amount, whatever the module declares —, and the server serves
// its good module.
func TestLoadCostBounded(t *testing.T) {
	good := wasm(t, "normal")
	for _, tc := range loadCases() {
		t.Run(tc.name, func(t *testing.T) {
			onEngines(t, func(t *testing.T, e engine) {
				watchBaseline(t)
				allocated := totalAlloc()
				s, err := host.New(context.Background(), host.Config{Interpreter: e.interpreter, Policy: tc.pol,
					ToolsFS: fstest.MapFS{"hostile.wasm": {Data: tc.wasm}, "normal.wasm": {Data: good}}})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				p := theProblem(t, s, "hostile")
				allocated = totalAlloc() - allocated
				if !errors.Is(p.Err, tc.is) {
					t.Errorf("problem %v does not match %v", p, tc.is)
				}
				for _, f := range tc.fragments {
					if !strings.Contains(p.String(), f) {
						t.Errorf("problem %q lacks %q", p, f)
					}
				}
				// The module's bytes are read (and copied) once or twice;
				// compiling it would take hundreds of MiB.
				if limit := 8<<20 + 4*uint64(len(tc.wasm)); allocated > limit {
					t.Errorf("the server allocated %d MiB to refuse a %d KiB module, want at most %d MiB", allocated>>20, len(tc.wasm)>>10, limit>>20)
				}
				t.Logf("allocated %.1f MiB to refuse a module of %.1f MiB", float64(allocated)/(1<<20), float64(len(tc.wasm))/(1<<20))
				stillServes(t, s)
			})
		})
	}
}

// refusedAtLoad asserts that under pol the server refuses module (its bytes
// mods[module]) at load for a load limit, with the fragments in the
// problem, and serves the others of mods, normal among them.
func refusedAtLoad(t *testing.T, e engine, pol *host.Policy, mods map[string][]byte, module string, fragments ...string) {
	t.Helper()
	watchBaseline(t)
	fsys := fstest.MapFS{}
	for name, b := range mods {
		fsys[name+".wasm"] = &fstest.MapFile{Data: b}
	}
	s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Policy: pol, Interpreter: e.interpreter})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := theProblem(t, s, module)
	if !errors.Is(p.Err, host.ErrLoadLimit) {
		t.Errorf("problem %v is not a load limit", p)
	}
	for _, f := range fragments {
		if !strings.Contains(p.String(), f) {
			t.Errorf("problem %q lacks %q", p, f)
		}
	}
	stillServes(t, s)
}

// theProblem returns the one problem of module, failing unless there is
// exactly one and no tool of the module is served.
func theProblem(t *testing.T, s *host.Server, module string) host.Problem {
	t.Helper()
	var found []host.Problem
	for _, p := range s.Problems() {
		if p.Module == module {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("problems of %s: %v, want one (all: %v)", module, found, s.Problems())
	}
	for _, ti := range s.Tools() {
		if ti.Module == module {
			t.Errorf("tool %s of the refused module %s is served", ti.Name, module)
		}
	}
	return found[0]
}

// totalAlloc is the bytes the process has allocated so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestSnapshotBounded: what _initialize leaves is charged to the module's
// memory and the server's snapshot budget. snapfill's _initialize fills
// memory with alternating bytes (a segment per byte, as runs of bytes);
// its snapshot holds no more than a plain copy of the memory. Under a
// memory budget of 200 MiB (a snapshot budget of 50 MiB) four of six such
// modules load, the other two are problems of the budget, and the
// snapshots held stay within it; under a 16 MiB limit its _initialize runs
// out of memory and the module is a load problem. The fills are 24 MiB
// and less (snapfill's own is 60), so that every _initialize ends well
// within its fixed 2 s also under the race detector on a busy machine.
func TestSnapshotBounded(t *testing.T) {
	snap := resized(t, wasm(t, "snapfill"), 24)
	const filled = 24 << 20
	pol := &host.Policy{MemoryBudgetMiB: 1024}
	onEngines(t, func(t *testing.T, e engine) {
		t.Run("one", func(t *testing.T) {
			watchBaseline(t)
			s, err := host.New(context.Background(), host.Config{Interpreter: e.interpreter, Policy: pol,
				ToolsFS: fstest.MapFS{"snap.wasm": {Data: snap}, "normal.wasm": {Data: wasm(t, "normal")}}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if ps := s.Problems(); len(ps) != 0 {
				t.Fatalf("problems: %v", ps)
			}
			lim := s.Limits()
			if lim.SnapshotBudgetMiB != 256 {
				t.Fatalf("snapshot budget %d MiB, want 256", lim.SnapshotBudgetMiB)
			}
			if held := lim.SnapshotBytes; held > filled || held < filled-64<<10 {
				t.Errorf("the snapshot of 24 MiB of alternating bytes holds %d bytes, want about %d and at most that", held, filled)
			}
			for range 2 {
				if got := text(t, s, "filled", "{}", nil); got != "ok" {
					t.Errorf("filled: %q", got)
				}
			}
			stillServes(t, s)
		})
		t.Run("six", func(t *testing.T) {
			// Six modules of 12 MiB against a snapshot budget of 50 MiB
			// (a quarter of 200): four fit, two are refused.
			const mib = 12
			watchBaseline(t)
			fsys := fstest.MapFS{"normal.wasm": {Data: wasm(t, "normal")}}
			// Named in the policy, so that Problems waits for every one of
			// them (once a module hits a load limit, the start waits only
			// for the modules the policy names).
			six := &host.Policy{MemoryBudgetMiB: 200, Modules: map[string]host.ModulePolicy{}}
			for i := range 6 {
				fsys[fmt.Sprintf("snap%d.wasm", i)] = &fstest.MapFile{Data: resized(t, renamed(t, wasm(t, "snapfill"), i), mib)}
				six.Modules[fmt.Sprintf("snap%d", i)] = host.ModulePolicy{}
			}
			s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Interpreter: e.interpreter, Policy: six})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			refused := 0
			for _, p := range s.Problems() {
				if !errors.Is(p.Err, host.ErrSnapshotBudget) || errors.Is(p.Err, host.ErrLoadLimit) {
					t.Errorf("problem %v: want the snapshot budget, not a load limit of the module", p)
				}
				if !strings.Contains(p.String(), "the snapshots of other loaded modules hold the rest") {
					t.Errorf("problem %q does not say why", p)
				}
				refused++
			}
			lim := s.Limits()
			if lim.SnapshotBudgetMiB != 50 {
				t.Fatalf("snapshot budget %d MiB, want 50", lim.SnapshotBudgetMiB)
			}
			held := lim.SnapshotBytes
			if refused != 2 || held > 50<<20 || held < 4*(mib<<20-64<<10) {
				t.Errorf("%d of 6 refused, snapshots hold %d MiB; want 2 refused and four snapshots of %d MiB within 50 MiB", refused, held>>20, mib)
			}
			stillServes(t, s)
		})
		t.Run("memory limit", func(t *testing.T) {
			watchBaseline(t)
			s, err := host.New(context.Background(), host.Config{Interpreter: e.interpreter,
				ToolsFS: fstest.MapFS{"snap.wasm": {Data: snap}, "normal.wasm": {Data: wasm(t, "normal")}},
				Policy:  &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 16}}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			p := theProblem(t, s, "snap")
			if !errors.Is(p.Err, host.ErrLoadLimit) {
				t.Errorf("problem %v is not a load limit", p)
			}
			guestErr(t, p.Err, host.KindOutOfMemory, "pre-initialisation failed", "memory limit of 16 MiB")
			if held := s.Limits().SnapshotBytes; held != 0 {
				t.Errorf("a refused snapshot holds %d bytes", held)
			}
			stillServes(t, s)
		})
	})
}

// renamed is snapfill with its tool named fill_<i> instead of filled: a
// module of its own, with a tool of its own.
func renamed(t *testing.T, wasm []byte, i int) []byte {
	t.Helper()
	out := bytes.Replace(wasm, []byte(`"name":"filled"`), []byte(fmt.Sprintf(`"name":"fill_%d"`, i)), 1)
	if bytes.Equal(out, wasm) {
		t.Fatal("snapfill declares no tool named filled")
	}
	return out
}

// resized returns snapfill's wasm filling mib MiB instead of 60.
func resized(t *testing.T, wasm []byte, mib byte) []byte {
	t.Helper()
	out := bytes.Replace(wasm, []byte("fill MiB:\x3c"), []byte("fill MiB:"+string(rune(mib))), 1)
	if bytes.Equal(out, wasm) {
		t.Fatal("snapfill has no fill size to patch")
	}
	return out
}

// TestSlowDescribeLoads: a describe that takes a second, within the 2 s
// the host gives it, loads and serves.
func TestSlowDescribeLoads(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		watchBaseline(t)
		s := serve(t, e.interpreter, nil, "slowok", "normal")
		if got := text(t, s, "slowok", "{}", nil); got != "ok" {
			t.Errorf("slowok: %q", got)
		}
	})
}

// worstAdmitted are, for each class of load cost, about the most expensive
// module the default bounds admit (none is a tool: each fails at its
// manifest, after it has been compiled and instantiated for describe,
// which is the whole cost of a load).
var worstAdmitted = []struct {
	name string
	wasm func(tb testing.TB) []byte
}{
	{"globals: 520,000", func(testing.TB) []byte { return globalsModule(520_000) }},
	{"functions: 60,000", func(testing.TB) []byte { return functionsModule(60_000) }},
	{"loops: 4 nests of 1,000", func(testing.TB) []byte { return command(repeat(nestedLoops(10, 1000), 4), nil) }},
	{"locals x loops: 4 of 1,000 locals across 31 loops", func(testing.TB) []byte { return command(repeat(liveAcrossLoops(1000, 31), 4), nil) }},
	{"br_table x locals: 11 of 360 x 360", func(testing.TB) []byte { return command(repeat(brTableSelect(360, 360), 11), nil) }},
	{"element entries: 850,000", func(testing.TB) []byte { return passiveElements(850_000) }},
	{"data segments: 1,000,000", func(testing.TB) []byte { return dataSegments(1_000_000) }},
	{"code: 31 MiB dense", func(testing.TB) []byte { return denseModule(31, 1<<20-64) }},
	{"snapshot: 60 MiB of alternating bytes", func(tb testing.TB) []byte { return wasm(tb, "snapfill") }},
}

// BenchmarkLoadPeak reports, for the worst module of each class that the
// default bounds admit, the peak resident memory a server's load of it
// adds (MiB over the process before the load) and how long the load takes,
// each in a fresh process (TestLoadPeakChild). Linux only:
//
//	go test -run '^$' -bench LoadPeak -benchtime 1x ./sandbox_test/
func BenchmarkLoadPeak(b *testing.B) {
	needsProc(b)
	for _, e := range engines {
		for _, c := range worstAdmitted {
			b.Run(e.name+"/"+c.name, func(b *testing.B) {
				var rss, ms float64
				for b.Loop() {
					f := measureInChild(b, "TestLoadPeakChild", c.name, e.name)
					rss, ms = float64(field(b, f, 1)-field(b, f, 0))/(1<<20), float64(field(b, f, 2))/1e6
				}
				b.ReportMetric(rss, "peak-MiB")
				b.ReportMetric(ms, "load-ms")
			})
		}
	}
}

// TestLoadPeakChild is one measurement of BenchmarkLoadPeak; it does
// nothing unless the benchmark started it.
func TestLoadPeakChild(t *testing.T) {
	name, interpreter := childCase(t)
	for _, c := range worstAdmitted {
		if c.name != name {
			continue
		}
		mod := c.wasm(t)
		base := resetPeak(t)
		start := time.Now()
		s, err := host.New(context.Background(), host.Config{ToolsFS: fstest.MapFS{"worst.wasm": {Data: mod}}, Interpreter: interpreter})
		if err != nil {
			t.Fatal(err)
		}
		ps := s.Problems()
		took := time.Since(start)
		report(base, peakRSS(t), took.Nanoseconds())
		for _, p := range ps {
			if errors.Is(p.Err, host.ErrLoadLimit) {
				t.Errorf("refused for a bound, not admitted: %v", p)
			}
		}
		t.Logf("problems: %v", ps)
		s.Close()
		return
	}
	t.Fatalf("unknown case %q", name)
}
