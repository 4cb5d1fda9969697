package sandbox_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// distinct returns b with a custom section holding i appended: the same
// module, with content (and digest) of its own, as an attacker makes many
// copies of one bad module, each loaded for itself.
func distinct(b []byte, i int) []byte {
	payload := append([]byte{1, 'i'}, binary.AppendUvarint(nil, uint64(i))...)
	out := append(append([]byte(nil), b...), 0)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	return append(out, payload...)
}

// badDir is a tool directory of n modules whose describe sleeps until the
// host's describe limit, and the well-behaved normal module, which is
// larger than each of them.
func badDir(tb testing.TB, n int) fstest.MapFS {
	fsys := fstest.MapFS{"normal.wasm": {Data: wasm(tb, "normal")}}
	bad := wasm(tb, "sleepdescribe")
	for i := range n {
		fsys[fmt.Sprintf("bad%03d.wasm", i)] = &fstest.MapFile{Data: distinct(bad, i)}
	}
	return fsys
}

// TestSlowDescribesDoNotHoldTheNamedModule: four modules whose describe
// sleeps to its limit share the directory with the normal module, which
// the policy names: normal's tool answers, and the start (what Problems
// and tools/list wait for) ends once normal has loaded and a bad module
// has hit its limit, while the bad modules behind it still wait for a
// load slot (two slots; each bad load holds one for the limit).
func TestSlowDescribesDoNotHoldTheNamedModule(t *testing.T) {
	fsys := badDir(t, 4)
	watchBaseline(t)
	s, err := host.New(context.Background(), host.Config{ToolsFS: fsys,
		Policy: &host.Policy{Modules: map[string]host.ModulePolicy{"normal": {}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stillServes(t, s)
	loading, limited := 0, 0
	for _, p := range s.Problems() {
		switch {
		case !strings.HasPrefix(p.Module, "bad"):
			t.Errorf("problem of a good module: %v", p)
		case strings.Contains(p.Err.Error(), "still loading"):
			loading++
		case strings.Contains(p.Err.Error(), "describe failed"):
			limited++
		default:
			t.Errorf("unexpected problem %v", p)
		}
	}
	if limited == 0 || loading == 0 {
		t.Errorf("at the end of the start: %d bad modules failed at the limit and %d still loading; want some of each", limited, loading)
	}
	stillServes(t, s)
}

// BenchmarkLoadDelayBehindBad reports how long after New a good module's
// tool first answers (delay-s) when N modules whose describe sleeps to the
// host's 2 s describe limit are in the same tool directory, each smaller
// than it: with the good module not named in the policy (only file size
// orders the loads) and named (a policy entry of its own: it loads first).
// No CPU is spent by the bad modules, so the figure is the queue's.
//
//	go test -run '^$' -bench LoadDelayBehindBad -benchtime 1x ./sandbox_test/
func BenchmarkLoadDelayBehindBad(b *testing.B) {
	for _, n := range []int{4, 64} {
		fsys := badDir(b, n)
		for _, named := range []bool{false, true} {
			b.Run(fmt.Sprintf("N=%d/named=%v", n, named), func(b *testing.B) {
				var pol *host.Policy
				if named {
					pol = &host.Policy{Modules: map[string]host.ModulePolicy{"normal": {}}}
				}
				var total time.Duration
				for b.Loop() {
					start := time.Now()
					s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Policy: pol})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Call(context.Background(), "echo", nil, nil); err != nil {
						b.Fatal(err)
					}
					total += time.Since(start)
					s.Close()
				}
				b.ReportMetric(total.Seconds()/float64(b.N), "delay-s")
			})
		}
	}
}
