package host

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkReloadDelay measures how long after a module file is renamed into
// place its new tool is served (a tools/call from then on reaches it), for a
// few ReloadDebounce values. Reported: the median and 90th percentile in ms.
func BenchmarkReloadDelay(b *testing.B) {
	for _, debounce := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond} {
		b.Run(fmt.Sprintf("debounce=%v", debounce), func(b *testing.B) {
			dir := b.TempDir()
			s, _ := newReloadServer(b, Config{ToolsDir: dir, ReloadDebounce: debounce})
			var delays []time.Duration
			i := 0
			for b.Loop() {
				i++
				tool := fmt.Sprintf("t%d", i)
				mod := verModule(b, tool, "v")
				start := time.Now()
				put(b, dir, "a.wasm", mod)
				await(s, func(c *catalog) bool { _, ok := c.tools[tool]; return ok })
				delays = append(delays, time.Since(start))
			}
			reportQuantiles(b, delays, "rename-to-served")
		})
	}
}

// BenchmarkReloadModules measures one reload of a directory of N small
// modules (distinct tool names): every module replaced by a new version
// ("all"), or only one of them ("one"), with compiled code in memory only
// ("none"), in an on-disk cache that has not seen the new versions
// ("cold"), or in one that has ("warm": the directory alternates between two
// sets of versions, both cached on disk, so each reload compiles from disk).
// Reported: reload-ms, the median time the server spent loading and
// swapping (the "duration" of its log, without the debounce), and
// rename-to-served-ms, the median from the last rename to the new set being
// served.
func BenchmarkReloadModules(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		for _, cache := range []string{"none", "cold", "warm"} {
			for _, change := range []string{"all", "one"} {
				if n == 1 && change == "one" {
					continue
				}
				b.Run(fmt.Sprintf("N=%d/cache=%s/change=%s", n, cache, change), func(b *testing.B) {
					benchReloadModules(b, n, cache, change)
				})
			}
		}
	}
}

func benchReloadModules(b *testing.B, n int, cache, change string) {
	dir := b.TempDir()
	cfg := Config{ToolsDir: dir}
	if cache != "none" {
		cfg.CacheDir = b.TempDir()
	}
	files := map[string]string{} // module name → digest
	version := func(op int) {
		for i := range n {
			if change == "one" && i > 0 && op > 0 {
				continue
			}
			v := fmt.Sprintf("v%d", op)
			if cache == "warm" {
				v = fmt.Sprintf("v%d", op%2) // two sets, alternating
			}
			mod := verModule(b, fmt.Sprintf("m%d", i), v)
			put(b, dir, fmt.Sprintf("m%d.wasm", i), mod)
			files[fmt.Sprintf("m%d", i)] = digest(mod)
		}
	}
	version(0)
	s, logs := newReloadServer(b, cfg)
	waitServed(s, files)
	op := 0
	if cache == "warm" { // put both sets in the disk cache
		op++
		version(op)
		waitServed(s, files)
	}
	var took, delays []time.Duration
	for b.Loop() {
		op++
		before := logs.reloadTime()
		version(op)
		start := time.Now()
		waitServed(s, files)
		delays = append(delays, time.Since(start))
		took = append(took, logs.reloadTime()-before)
	}
	reportQuantiles(b, took, "reload")
	reportQuantiles(b, delays, "rename-to-served")
}

// waitServed waits until the served catalog was built from exactly files
// and has no problems.
func waitServed(s *Server, files map[string]string) {
	await(s, func(c *catalog) bool { return built(files)(c) && len(c.problems) == 0 })
}

// reportQuantiles reports the median (and, with enough samples, the 90th
// percentile) of ds in milliseconds.
func reportQuantiles(b *testing.B, ds []time.Duration, name string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), name+"-ms")
	if len(ds) >= 10 {
		b.ReportMetric(ms(ds[len(ds)*9/10]), name+"-p90-ms")
	}
}
