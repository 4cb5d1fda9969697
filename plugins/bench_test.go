package plugins

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
