package plugins

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

// BenchmarkScan measures one scan of N modules of 100 KiB: cold (every file
// read and hashed) and warm (digests reused from the previous scan, files
// only stat'ed).
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{10, 100} {
		dir := b.TempDir()
		body := strings.Repeat("x", 100<<10)
		for i := range n {
			writeFile(b, filepath.Join(dir, fmt.Sprintf("m%03d.wasm", i)), fmt.Sprint(i)+body)
		}
		cfg, _ := Config{Dir: dir}.withDefaults()
		for _, warm := range []bool{false, true} {
			b.Run(fmt.Sprintf("N=%d/warm=%v", n, warm), func(b *testing.B) {
				sc := newScanner(cfg)
				sc.settle = 0
				sc.now = func() time.Time { return time.Now().Add(time.Hour) } // files count as old
				b.SetBytes(int64(n * len(body)))
				for b.Loop() {
					if !warm {
						sc.cache = map[string]cacheEntry{}
					}
					if s := scanDir(b, sc); len(s.modules) != n {
						b.Fatalf("scan: %d modules, want %d", len(s.modules), n)
					}
				}
			})
		}
	}
}

// BenchmarkReloadDelay measures the time from a module's final write (an
// atomic rename into place) to the snapshot holding it arriving on Changes,
// with a 20ms debounce, in a directory of 10 modules. The median is
// reported as ms/reload; the floor is the debounce interval.
func BenchmarkReloadDelay(b *testing.B) {
	dir := b.TempDir()
	for i := range 10 {
		writeFile(b, filepath.Join(dir, fmt.Sprintf("m%d.wasm", i)), fmt.Sprint(i))
	}
	w := newTestWatcher(b, Config{Dir: dir, Debounce: testDebounce})
	<-w.Changes()
	var delays []time.Duration
	i := 0
	for b.Loop() {
		i++
		want := sum(fmt.Sprint("v", i))
		start := time.Now()
		writeAtomic(b, filepath.Join(dir, "m0.wasm"), fmt.Sprint("v", i))
		for s := range w.Changes() {
			if m, _ := s.module("m0"); m.Digest == want {
				break
			}
		}
		delays = append(delays, time.Since(start))
	}
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2])/float64(time.Millisecond), "ms/reload")
	b.ReportMetric(float64(delays[len(delays)*9/10])/float64(time.Millisecond), "p90-ms/reload")
}

// sleepLoader stands for modules whose describe runs into its time limit:
// the load of a module whose name starts with "bad" holds its slot for
// limit (or until its context ends) and fails as a describe past its limit
// does; any other module loads at once. Each bad load that begins sends
// on began, when there is room.
type sleepLoader struct {
	limit time.Duration
	began chan struct{}
}

func (l sleepLoader) Load(ctx context.Context, m Module, wasm []byte) (*fakeCompiled, *abi.Manifest, error) {
	if strings.HasPrefix(m.Name, "bad") {
		select {
		case l.began <- struct{}{}:
		default:
		}
		select {
		case <-time.After(l.limit):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("describe: %w", context.DeadlineExceeded)
	}
	man, err := abi.DecodeManifest(wasm)
	return &fakeCompiled{digest: m.Digest}, man, err
}

func (sleepLoader) Release(*fakeCompiled) {}

// BenchmarkLoadDelayBehindBad reports how long a good module takes to be
// served when N bad modules, smaller than it, were queued just before it,
// each holding a load slot for a describe limit (limit, scaled down from
// the host's 2 s) before it fails: delay-ms, and delay-limits (the delay
// in units of that limit; the host's figure is twice it in seconds). Two
// slots. Cases: the good module in the same source as the bad ones and
// unknown to the rules (size order only), the same source and named by
// the rules (Rules.Known), and another source, queued once the bad
// modules hold both slots (the delay is then what is left of one bad
// load).
//
//	go test -run '^$' -bench LoadDelayBehindBad -benchtime 5x ./plugins/
func BenchmarkLoadDelayBehindBad(b *testing.B) {
	const limit = 20 * time.Millisecond
	for _, n := range []int{4, 64} {
		bad := map[string][]string{} // distinct contents (a digest loads once), all smaller than good
		for i := range n {
			name := fmt.Sprintf("bad%02d", i)
			bad[name] = []string{name}
		}
		for _, place := range []string{"same-source", "same-source-known", "other-source"} {
			b.Run(fmt.Sprintf("N=%d/%s", n, place), func(b *testing.B) {
				var delays []time.Duration
				for b.Loop() {
					began := make(chan struct{}, 2)
					p := NewLoads(sleepLoader{limit, began}, LoadConfig{Workers: 2, Timeout: time.Minute})
					good := map[string][]string{"good": {"g", "a-longer-tool-name-than-the-bad-ones-have"}}
					var snap *Snapshot
					var rules Rules
					start := time.Now()
					switch place {
					case "other-source":
						badSnap := snapFrom(b, "A", bad, nil)
						Build(context.Background(), nil, badSnap, p, Rules{})
						<-began
						<-began
						snap = snapFrom(b, "B", good, nil)
						start = time.Now()
					default:
						all := maps.Clone(bad)
						all["good"] = good["good"]
						snap = snapFrom(b, "A", all, nil)
						if place == "same-source-known" {
							rules.Known = map[string]bool{"good": true}
						}
					}
					var gen *Generation[*fakeCompiled]
					for {
						gen, _ = Build(context.Background(), gen, snap, p, rules)
						if _, _, ok := gen.Tool("g"); ok {
							break
						}
						<-p.Finished()
					}
					delays = append(delays, time.Since(start))
					p.Close()
				}
				slices.Sort(delays)
				med := delays[len(delays)/2]
				b.ReportMetric(float64(med)/float64(time.Millisecond), "delay-ms")
				b.ReportMetric(float64(med)/float64(limit), "delay-limits")
			})
		}
	}
}
