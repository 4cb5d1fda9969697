// Command wasmbench measures wasmtask against its peers side by side, in
// one run, and prints the ratios as a table (and, with -markdown, writes
// them to BENCHMARKS.md). bench/run.sh builds what it needs and runs it;
// see BENCHMARKS.md at the repository root for what each figure measures.
//
// Timed figures interleave their sides: every round runs one batch of each
// side, in an order that alternates between rounds. Each side's time is the
// median of its rounds; the ratio, the median of the rounds' ratios of
// wasmtask to the reference, is the claim. Absolute times depend on the
// machine.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// A result is one line of the table.
type result struct {
	figure, label       string
	wasmtask, reference float64 // in unit
	unit                string
	goal                string
	refName             string
	samples             [2][]float64 // timed figures: wasmtask's and the reference's rounds, in unit
	roundRatio          float64      // timed figures: the median of the rounds' ratios
}

// ratio is the figure's claim: for a timed figure the median of the
// ratios of each round (the two sides of a round ran back to back, so a
// slow spell of the machine cancels out), else the ratio of the values.
func (r result) ratio() float64 {
	if r.samples[0] != nil {
		return r.roundRatio
	}
	return r.wasmtask / r.reference
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "peer-mcpgo" {
		if err := peerMcpgo(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "wasmbench peer-mcpgo:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "wasmbench:", err)
		os.Exit(1)
	}
}

type options struct {
	plugins, wasmtask, markdown, command, commit string
	rounds                                       int
	batch                                        time.Duration
	figures                                      []string
}

func run(args []string) error {
	fs := flag.NewFlagSet("wasmbench", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.plugins, "plugins", "", "`DIR` holding benchtool.wasm, spin.wasm and extism_sha256.wasm (bench/run.sh builds them)")
	fs.StringVar(&o.wasmtask, "wasmtask", "", "the wasmtask `BINARY` for figure 6 (bench/run.sh builds it)")
	fs.StringVar(&o.markdown, "markdown", "", "write the results to this markdown `FILE` (BENCHMARKS.md)")
	fs.StringVar(&o.command, "command", "", "the command line to name in the markdown")
	fs.StringVar(&o.commit, "commit", "", "the commit measured, to name in the markdown")
	fs.IntVar(&o.rounds, "rounds", 10, "interleaved rounds per timed figure")
	fs.DurationVar(&o.batch, "batch", 400*time.Millisecond, "duration of one side's batch in a round")
	figs := fs.String("figures", "1,2,3,4,5,6,7", "comma-separated figures to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.figures = strings.Split(*figs, ",")
	if o.plugins == "" {
		return fmt.Errorf("-plugins is required (use bench/run.sh)")
	}
	ctx := context.Background()
	began := time.Now()
	timed := []figure{
		{id: "1", title: "host call vs raw wazero", setup: func() ([]side, []row, func(), error) { return figHostVsWazero(ctx) }},
		{id: "2", title: "fresh instance vs Extism", setup: func() ([]side, []row, func(), error) { return figExtism(ctx, o.plugins) }},
		{id: "3", title: "Go word_count vs naive wazero", setup: func() ([]side, []row, func(), error) { return figGoNaive(ctx, o.plugins) }},
		{id: "4", title: "tasks over HTTP vs mcp-go", setup: func() ([]side, []row, func(), error) { return figHTTP(ctx, o.plugins, "4") }},
		{id: "5", title: "tools/call over HTTP vs go-sdk", setup: func() ([]side, []row, func(), error) { return figHTTP(ctx, o.plugins, "5") }},
		{id: "7", title: "CPU-bound loop, cancellable", setup: func() ([]side, []row, func(), error) { return figSpin(ctx, o.plugins) }},
	}
	var results []result
	for _, id := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		if !slices.Contains(o.figures, id) {
			continue
		}
		t0 := time.Now()
		fmt.Fprintf(os.Stderr, "figure %s ...", id)
		if id == "6" {
			if o.wasmtask == "" {
				return fmt.Errorf("figure 6 needs -wasmtask")
			}
			rs, err := figRSS(o.plugins, o.wasmtask)
			if err != nil {
				return fmt.Errorf("figure 6: %w", err)
			}
			results = append(results, rs...)
			fmt.Fprintf(os.Stderr, " %v\n", time.Since(t0).Round(time.Second))
			continue
		}
		i := slices.IndexFunc(timed, func(f figure) bool { return f.id == id })
		rs, err := runTimed(timed[i], o)
		if err != nil {
			return fmt.Errorf("figure %s: %w", id, err)
		}
		results = append(results, rs...)
		fmt.Fprintf(os.Stderr, " %v\n", time.Since(t0).Round(time.Second))
	}
	elapsed := time.Since(began)
	printTable(os.Stdout, results)
	fmt.Printf("\n%d figures in %v\n", len(o.figures), elapsed.Round(time.Second))
	if o.markdown != "" {
		return os.WriteFile(o.markdown, markdown(results, o, elapsed), 0o644)
	}
	return nil
}

// runTimed sets a figure up, measures its sides interleaved and reads its
// rows.
func runTimed(f figure, o options) ([]result, error) {
	sides, rows, cleanup, err := f.setup()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	m, err := measure(sides, o.rounds, o.batch, 3)
	if err != nil {
		return nil, err
	}
	var out []result
	for _, r := range rows {
		num, den := m[r.num], m[r.den]
		unit, scale := "µs/op", 1e3
		if max(num.median(), den.median()) >= 1e6 {
			unit, scale = "ms/op", 1e6
		}
		scaled := func(x *measured) []float64 {
			s := make([]float64, len(x.samples))
			for i, v := range x.samples {
				s[i] = v / scale
			}
			return s
		}
		ratios := measured{samples: make([]float64, len(num.samples))}
		for i := range num.samples {
			ratios.samples[i] = num.samples[i] / den.samples[i]
		}
		out = append(out, result{figure: r.figure, label: r.label, goal: r.goal, refName: r.den, unit: unit,
			wasmtask: num.median() / scale, reference: den.median() / scale,
			samples: [2][]float64{scaled(num), scaled(den)}, roundRatio: ratios.median()})
	}
	return out, nil
}

func format(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func printTable(w io.Writer, results []result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "fig\twhat\twasmtask\treference\tratio\tgoal")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s %s\t%.2fx\t%s\n", r.figure, r.label, format(r.wasmtask), r.unit, format(r.reference), r.unit, r.ratio(), r.goal)
	}
	tw.Flush()
}

func machine() string {
	var b strings.Builder
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	memTotal := "unknown"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(data), "\n")
		if f := strings.Fields(strings.TrimPrefix(line, "MemTotal:")); len(f) == 2 && f[1] == "kB" {
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				memTotal = fmt.Sprintf("%.0f GiB", kb/(1<<20))
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(&b, "%s, %d CPUs (GOMAXPROCS %d), %s memory, Linux %s, %s %s/%s",
		cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), memTotal, strings.TrimSpace(string(kernel)), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func markdown(results []result, o options, elapsed time.Duration) []byte {
	var b bytes.Buffer
	b.WriteString(mdHead)
	fmt.Fprintf(&b, "- Date: %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	if o.commit != "" {
		fmt.Fprintf(&b, "- Commit: %s\n", o.commit)
	}
	fmt.Fprintf(&b, "- Machine: %s\n", machine())
	if o.command != "" {
		fmt.Fprintf(&b, "- Command: `%s`\n", o.command)
	}
	fmt.Fprintf(&b, "- Settings: %d interleaved rounds of %v per side; the run took %v\n\n", o.rounds, o.batch, elapsed.Round(time.Second))
	b.WriteString("| # | figure | wasmtask | reference | ratio | goal |\n|---|---|---:|---:|---:|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s %s | **%.2fx** | %s |\n", r.figure, r.label, format(r.wasmtask), r.unit, format(r.reference), r.unit, r.ratio(), r.goal)
	}
	b.WriteString(mdBody)
	b.WriteString("\n## Rounds\n\nEvery round of every timed row, wasmtask's then the reference's, so the spread behind each median is visible.\n\n")
	b.WriteString("| # | figure | wasmtask rounds | reference rounds |\n|---|---|---|---|\n")
	for _, r := range results {
		if r.samples[0] == nil {
			continue
		}
		list := func(s []float64) string {
			parts := make([]string, len(s))
			for i, v := range s {
				parts[i] = format(v)
			}
			return strings.Join(parts, " ") + " " + r.unit
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.figure, r.label, list(r.samples[0]), list(r.samples[1]))
	}
	return b.Bytes()
}

const mdHead = `# Benchmarks

wasmtask against its peers, every figure measured side by side in one run of
one script. Regenerate this file with:

    bench/run.sh

(it builds the benchmark plugins and the wasmtask binary, runs
` + "`bench/cmd/wasmbench`" + `, and rewrites this file; a few minutes on two cores).

## How to read it

**The ratios are the claim**: wasmtask's figure divided by the reference's,
both measured in the same process (or, for memory, on the same machine one
after the other), interleaved round by round so that a noisy neighbour or a
frequency change hits both sides alike. Below 1 wasmtask is faster (or
smaller); above 1 it pays that factor for what it does and the reference
does not (a fresh instance per call, admission, validation, cancellation).
The absolute times are context: they depend on this machine and the load
on it. In a timed figure each side's time is the median of its rounds, and
the ratio is the median of the rounds' ratios (the two sides of a round run
back to back); the last table lists every round.

`

const mdBody = `
## What each figure measures

All in-process figures call the product's exported API (` + "`host.New`" + `,
` + "`Server.Call`" + `, ` + "`Server.Serve`" + `) from the benchmark module; the HTTP
figures serve every server, wasmtask's and the peers', from this process on
its own loopback listener, and drive all of them with the same minimal
Streamable HTTP client (one session per client goroutine, one request at a
time per session). wasmtask runs with its default policy (so at most 8
calls of one tool at once, the others queued) and its result cache off;
the peers with their defaults.

1. **Host call vs raw wazero.** ` + "`Server.Call`" + ` (catalog, admission, argument
   validation against the schema, a fresh instance, the result decoded)
   against the bare wazero work it wraps: instantiate the same compiled
   module with the request on stdin, run ` + "`_start`" + `, collect stdout, with
   wasmtask's runtime settings (close on context done, anonymous instances,
   crypto/rand). Modules: the C ` + "`sha256`" + ` tool with 16 B and 1 KiB of
   arguments, and the Go-built ` + "`word_count`" + ` (examples/go/demo). The ratio is
   the host's overhead. The raw side runs the module as built, with
   wazero's own linear-memory allocator; wasmtask prepares a module when it
   loads it (its data segments merged) and gives wazero an allocator of its
   own (an anonymous mapping, no copy when memory grows). A Go module, whose
   start-up applies tens of thousands of data segments and grows its
   memory, can therefore come out below 1.
2. **Fresh instance vs Extism.** The same 16 B / 1 KiB ` + "`sha256`" + ` call: wasmtask
   makes a fresh instance per call; Extism's Go SDK (v1.7.1) calls one plugin
   instance it reuses. The Extism plugin (bench/plugins/extism_sha256.c,
   built from source by run.sh) does the same work as the C tool: reads
   the input through the Extism kernel's imports, decodes the JSON string,
   hashes it and writes the same CallToolResult JSON. Extism runs with a
   30 s timeout (wasmtask's default), which turns on the same
   close-on-context-done wasmtask always has. A reused instance keeps state
   between calls and cannot run two calls at once: the ratio is the price
   of isolation. The context rows run Extism without a timeout: with
   close-on-context-done, wazero starts a watcher goroutine for every call
   into a module, and each of the plugin's calls into the Extism kernel
   (input, alloc, store, output) is one, so Extism pays it per kernel call
   (more with more input), where wasmtask pays it once per tool call.
3. **Go word_count vs naive wazero.** The Go-built tool, a fresh instance per
   call, through ` + "`Server.Call`" + `, against what a naive wazero host does:
   the default runtime and module configuration, compiled once and
   instantiated per call. A Go module's start-up (runtime init, data
   segments) dominates both; what wasmtask does at load to shorten it
   (figure 1) shows here. The second row serves the same tool built for
   pre-initialisation (examples/go/preinit, ` + "`examples/build.sh go-preinit`" + `:
   ` + "`-buildmode=c-shared -tags wasmtask_preinit`" + `), which wasmtask runs to
   the end of its initialisation once at load and snapshots (ABI.md §13);
   each call starts from the snapshot in a fresh instance. Its goal is
   absolute: about a millisecond per call.
4. **Task round trip over HTTP vs mcp-go.** One task from start to result:
   a task-augmented ` + "`tools/call`" + `, one ` + "`tasks/get`" + `, then ` + "`tasks/result`" + ` (which
   blocks until the task is done), with 1, 8 and 32 concurrent clients.
   wasmtask runs its C ` + "`noop`" + ` tool (bench/plugins/benchtool.c) in a fresh
   instance; mcp-go v1.2.1 runs a Go handler with its native tasks. mcp-go
   runs a task's handler under the ` + "`tools/call`" + ` request's context, which ends
   as soon as the task is created, so a handler that honoured it would be
   cancelled before doing anything: the mcp-go handler ignores its context
   (as a working one must), and mcp-go's figure includes no cancellation,
   while wasmtask's includes a guest that ` + "`tasks/cancel`" + ` stops. With several
   clients the figure is wall time over all the round trips (the inverse
   of throughput), not one client's latency.
5. **Plain tools/call over HTTP vs go-sdk.** A plain ` + "`tools/call`" + ` of ` + "`noop`" + `:
   wasmtask (a fresh Wasm instance per call) against a bare
   go-sdk v1.8.0 server with a Go handler, 1, 8 and 32 clients. In both
   HTTP figures the client accepts JSON and event streams; wasmtask
   answers these requests as one JSON body (RATIONALE: "Why are the
   commonest requests answered before go-sdk sees them?"), go-sdk on an
   SSE stream, mcp-go as JSON.
6. **1,000 running tasks: memory.** Separate processes, one after the
   other: ` + "`wasmtask serve --http`" + ` (the binary built from this tree) with
   1,000 task calls of the C ` + "`sleep`" + ` tool, each a live instance blocked in
   WASI ` + "`poll_oneoff`" + ` (policy: 1 MiB per instance, 1,024 instances), against
   mcp-go with 1,000 Go handlers blocked in ` + "`time.Sleep`" + ` (again not on their
   context, which mcp-go has already cancelled). Both are read from
   ` + "`/proc/PID/status`" + ` once all 1,000 run (wasmtask's instance gauge, a
   counter in the mcp-go process): VmRSS, VmHWM, and RSS added per task over
   the idle process.
7. **CPU-bound guest loop.** A tight C loop (xorshift, 10 million steps,
   bench/plugins/loop.h) in a bare module, instantiated and called through
   wazero with close-on-context-done on (cancellable) and off (not
   cancellable), and the same loop as wasmtask's ` + "`spin`" + ` tool through
   ` + "`Server.Call`" + `; both against the uncancellable loop. The bulk-memory
   row does the same with 1,000 memsets of a 1 MiB buffer (one
   ` + "`memory.fill`" + ` each, clang -mbulk-memory), which wasmtask charges
   by their length, 64 KiB at a time (RATIONALE: "Why are bulk instructions
   charged by their length, in steps?").
`
