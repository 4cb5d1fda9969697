package host

// Hot reload, end to end: a real Server watching a real directory, driven
// through MCP sessions (hosttest's client over ServeStdio, or over
// Streamable HTTP where the transport matters). The modules are
// testdata/reload/ver.wasm with its tool name and answer patched in, so one
// build gives any number of distinct modules.
//
// The tests wait on events, never on time: a catalog swap (awaitCatalog), a
// message from the server, a line of the operator log, a module's Done
// channel. A wait that never ends is ended by go test's -timeout, which
// prints every goroutine's stack.
//
// This file holds what the reload tests share; each reload_*_test.go file
// holds the tests of one concern.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/plugins"
)

// testDebounce is the ReloadDebounce of the reload tests. Small, so that
// the tests are quick; no test depends on it being short, or on a reload
// happening within any time.
const testDebounce = 20 * time.Millisecond

// --- modules -----------------------------------------------------------

var verWasm = sync.OnceValues(func() ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", "reload", "ver.wasm"))
})

// patch replaces the JSON string placeholder (quotes included) in b with the
// JSON string s, padded with spaces after its closing quote to the same
// length, so the module's layout does not change.
func patch(tb testing.TB, b []byte, placeholder, s string) []byte {
	tb.Helper()
	old := []byte(strconv.Quote(placeholder))
	repl := []byte(strconv.Quote(s))
	if len(repl) > len(old) {
		tb.Fatalf("%q is longer than the %d bytes of its placeholder", s, len(old)-2)
	}
	repl = append(repl, bytes.Repeat([]byte(" "), len(old)-len(repl))...)
	if n := bytes.Count(b, old); n != 1 {
		tb.Fatalf("placeholder %s found %d times, want 1", old, n)
	}
	return bytes.Replace(b, old, repl, 1)
}

// verModule is a module declaring one tool, which answers version.
func verModule(tb testing.TB, tool, version string) []byte {
	tb.Helper()
	b, err := verWasm()
	if err != nil {
		tb.Fatal(err)
	}
	b = patch(tb, b, "TOOL_PLACEHOLDER", tool)
	return patch(tb, b, "VERSION_PLACEHOL", version)
}

// replaceOnce replaces the only occurrence of old in b.
func replaceOnce(tb testing.TB, b []byte, old, new string) []byte {
	tb.Helper()
	if len(old) != len(new) || bytes.Count(b, []byte(old)) != 1 {
		tb.Fatalf("cannot patch %q into %q", old, new)
	}
	return bytes.Replace(bytes.Clone(b), []byte(old), []byte(new), 1)
}

// put writes a module the safe way: a temporary file (which the watcher
// ignores), then a rename into place.
func put(tb testing.TB, dir, file string, b []byte) {
	tb.Helper()
	if err := writeModule(dir, file, b); err != nil {
		tb.Fatal(err)
	}
}

// writeModule is put for goroutines other than the test's: it returns the
// error.
func writeModule(dir, file string, b []byte) error {
	tmp := filepath.Join(dir, "."+file+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, file))
}

func remove(tb testing.TB, dir string, files ...string) {
	tb.Helper()
	for _, f := range files {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			tb.Fatal(err)
		}
	}
}

// --- server, catalog and log -------------------------------------------

func newReloadServer(tb testing.TB, cfg Config) (*Server, *logSink) {
	tb.Helper()
	sink := newLogSink()
	cfg.Logger = slog.New(sink)
	if cfg.ReloadDebounce == 0 {
		cfg.ReloadDebounce = testDebounce
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	_ = s.ready(context.Background(), "") // the first modules have loaded
	return s, sink
}

// await blocks until cond holds for the served catalog. It wakes on each
// swap and has no deadline of its own (see the top of this file).
func await(s *Server, cond func(*catalog) bool) {
	_ = s.awaitCatalog(context.Background(), cond)
}

// seq is the number of the served generation.
func seq(s *Server) uint64 { return s.catalog.Load().gen.Seq() }

// scanSeq is the number of the directory scan the served generation was
// built from: one per reload the watcher asked for, however many
// generations the background loads of that scan made.
func scanSeq(s *Server) uint64 { return s.catalog.Load().gen.Snapshot().Seq() }

// names returns the names of the tools c serves, sorted.
func names(c *catalog) []string {
	out := []string{}
	for _, t := range c.list {
		out = append(out, t.Name)
	}
	return out
}

// serves returns a condition: c serves exactly the tools want.
func serves(want ...string) func(*catalog) bool {
	want = slices.Sorted(slices.Values(append([]string{}, want...)))
	return func(c *catalog) bool { return slices.Equal(names(c), want) }
}

// after returns a condition: a reload newer than generation before served,
// with every module of its scan loaded (or failed), and cond holds.
func after(before uint64, cond func(*catalog) bool) func(*catalog) bool {
	return func(c *catalog) bool { return c.gen.Seq() > before && c.gen.Loading() == 0 && cond(c) }
}

// digest is a module's digest as snapshots give it.
func digest(b []byte) string { return plugins.Digest(b) }

// built returns a condition: c was built from a snapshot of exactly these
// modules (name → digest). The map must not change while it is in use.
func built(want map[string]string) func(*catalog) bool {
	return func(c *catalog) bool {
		mods := c.gen.Snapshot().Modules()
		if len(mods) != len(want) || c.gen.Loading() > 0 {
			return false
		}
		for _, m := range mods {
			if want[m.Name] != m.Digest {
				return false
			}
		}
		return true
	}
}

// problemFiles returns the base names of the files c's problems name.
func problemFiles(c *catalog) []string {
	files := []string{}
	for _, p := range c.problems {
		files = append(files, filepath.Base(p.Path))
	}
	slices.Sort(files)
	return files
}

// logSink keeps the operator log of a test server, and the durations of
// its reloads. Waiters are woken by each new line.
type logSink struct {
	mu        sync.Mutex
	lines     []string
	durations []time.Duration // "duration" of each "tools reloaded"
	added     chan struct{}   // closed and replaced by each new line
}

func newLogSink() *logSink { return &logSink{added: make(chan struct{})} }

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logSink) WithGroup(string) slog.Handler            { return l }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	var took time.Duration
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		if a.Key == "duration" && r.Message == "tools reloaded" {
			took = a.Value.Duration()
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, b.String())
	if took > 0 {
		l.durations = append(l.durations, took)
	}
	close(l.added)
	l.added = make(chan struct{})
	return nil
}

// reloadTime returns the summed duration of the reloads logged so far.
func (l *logSink) reloadTime() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum time.Duration
	for _, d := range l.durations {
		sum += d
	}
	return sum
}

func (l *logSink) grepLocked(subs []string) []string {
	var out []string
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// await blocks until a line contains every one of subs. The server logs a
// reload after it swaps the catalog in, so a test that saw the swap waits
// here for its log.
func (l *logSink) await(subs ...string) {
	for {
		l.mu.Lock()
		found, added := len(l.grepLocked(subs)) > 0, l.added
		l.mu.Unlock()
		if found {
			return
		}
		<-added
	}
}

// --- an MCP session ----------------------------------------------------

// newClient opens an MCP session over ServeStdio and initializes it with
// the elicitation capability.
func newClient(tb testing.TB, s *Server) *hosttest.Client {
	tb.Helper()
	c := hosttest.Stdio(tb, func(in io.Reader, out io.Writer) error {
		return s.ServeStdio(context.Background(), in, out)
	})
	c.Initialize(map[string]any{"elicitation": map[string]any{}})
	return c
}

// listTools returns the names tools/list shows, sorted.
func listTools(tb testing.TB, c interface {
	Call(string, any) hosttest.Message
}) []string {
	tb.Helper()
	var list struct{ Tools []struct{ Name string } }
	if err := c.Call("tools/list", map[string]any{}).Decode(&list); err != nil {
		tb.Fatalf("tools/list: %v", err)
	}
	out := []string{}
	for _, t := range list.Tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// outcome returns the text of a tools/call or tasks/result response and
// whether it failed: a JSON-RPC error or a tool error.
func outcome(tb testing.TB, m hosttest.Message) (text string, failed bool) {
	tb.Helper()
	if m.Error != nil {
		return m.Error.Message, true
	}
	var r hosttest.ToolResult
	if err := m.Decode(&r); err != nil {
		tb.Fatalf("decoding %s: %v", m.Raw, err)
	}
	return r.Text(), r.IsError
}

// answer is the text of a call that must succeed.
func answer(tb testing.TB, m hosttest.Message) string {
	tb.Helper()
	text, failed := outcome(tb, m)
	if failed {
		tb.Fatalf("got the failure %q, want an answer (%s)", text, m.Raw)
	}
	return text
}
