package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// Results that are valid JSON and still unfit for a client: strings that
// are not valid Unicode, numbers no client reads as written, and results
// whose cost lies in their counts (blocks, values, nesting) more than in
// their bytes.

// TestUnicodeOutput (unicode.wat): lone surrogate escapes and bytes that
// are not UTF-8, in text, in structuredContent values and in member names,
// reach the caller as U+FFFD; a valid pair stays as it is.
func TestUnicodeOutput(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "unicode", func(t *testing.T, s *host.Server) {
			res, err := s.Call(context.Background(), "lone", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.Content[0].Text, "a\uFFFDb"; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			want := `{"k\ufffd":"v\ufffd","pair":"\ud83d\ude00","raw\ufffd":"\ufffd\ufffd\ufffd"}`
			if got := string(res.StructuredContent); got != want {
				t.Errorf("structuredContent = %s, want %s", got, want)
			}

			// Over MCP, what the client receives is valid UTF-8 and
			// decodes to the same.
			c := openSession(t, s)
			m := c.Await(c.Request("tools/call", map[string]any{"name": "lone", "arguments": map[string]any{}}), nil)
			if !utf8.Valid(m.Raw) || bytes.Contains(m.Raw, []byte(`\ud800`)) || bytes.Contains(m.Raw, []byte(`\udc00`)) {
				t.Errorf("the client received %s", m.Raw)
			}
			var r struct {
				StructuredContent map[string]string `json:"structuredContent"`
			}
			if err := m.Decode(&r); err != nil || r.StructuredContent["k\uFFFD"] != "v\uFFFD" || r.StructuredContent["raw\uFFFD"] != "\uFFFD\uFFFD\uFFFD" {
				t.Errorf("structuredContent over MCP = %v (%v), want U+FFFD in place of the bad Unicode", r.StructuredContent, err)
			}
		})
	})
}

// TestNumbersOutput (bignum.wat): a number whose magnitude a float64
// cannot hold (1e400, an integer of 400 digits, -1e309 in an array) is an
// invalid result; the largest float64 and a number that rounds to zero
// are not.
func TestNumbersOutput(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "bignum", func(t *testing.T, s *host.Server) {
			for tool, want := range map[string]string{
				"inf":  "the number 1e400 is outside the range of a 64-bit float",
				"huge": "(400 characters) is outside the range of a 64-bit float",
				"neg":  "the number -1e309 is outside the range of a 64-bit float",
			} {
				_, err := s.Call(context.Background(), tool, nil, nil)
				guestErr(t, err, host.KindBadOutput, `module "bignum" tool "`+tool+`": bad output: `, want)
			}
			for _, tool := range []string{"max", "tiny"} {
				if got := text(t, s, tool, "{}", nil); got != tool {
					t.Errorf("%s answered %q", tool, got)
				}
			}
		})
	})
}

// blocksPolicy lets the tools of blocks.c write a MiB, with limits on
// counts raised for the tools named in raised.
func blocksPolicy(raised bool) *host.Policy {
	tools := map[string]host.ToolPolicy{}
	for _, tool := range []string{"blocks", "values", "deep"} {
		tools[tool] = host.ToolPolicy{MaxOutputBytes: 1 << 20}
	}
	if raised {
		tools["blocks"] = host.ToolPolicy{MaxOutputBytes: 1 << 20, MaxResultBlocks: 20_000}
		tools["values"] = host.ToolPolicy{MaxOutputBytes: 1 << 20, MaxResultValues: 200_000}
		tools["deep"] = host.ToolPolicy{MaxOutputBytes: 1 << 20, MaxResultDepth: 128}
	}
	return policy(map[string]host.ModulePolicy{"blocks": {Tools: tools}})
}

// TestResultCounts (blocks.c): within the byte limit, a result of more
// content blocks or JSON values than its tool's limits is too large, and
// one nested deeper than its limit is invalid; the policy raises each
// limit for one tool, and the same results then pass.
func TestResultCounts(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		t.Run("defaults", func(t *testing.T) {
			hostile(t, e, blocksPolicy(false), "blocks", func(t *testing.T, s *host.Server) {
				_, err := s.Call(context.Background(), "blocks", nil, nil)
				guestErr(t, err, host.KindOutputTooLarge, "more than 10000 content blocks")
				_, err = s.Call(context.Background(), "values", nil, nil)
				guestErr(t, err, host.KindOutputTooLarge, "more than 100000 JSON values")
				_, err = s.Call(context.Background(), "deep", nil, nil)
				guestErr(t, err, host.KindBadOutput, "nested deeper than 64 levels")

				c := openSession(t, s)
				for tool, want := range map[string]string{
					"blocks": `tool "blocks" returned a result that is too large: more than 10000 content blocks`,
					"deep":   `tool "deep" returned an invalid result: JSON nested deeper than 64 levels`,
				} {
					if got, isErr := c.tool(tool, nil); !isErr || !strings.HasPrefix(got, want) {
						t.Errorf("%s over MCP: %q (isError %v), want a tool error starting %q", tool, got, isErr, want)
					}
				}
			})
		})
		t.Run("raised", func(t *testing.T) {
			hostile(t, e, blocksPolicy(true), "blocks", func(t *testing.T, s *host.Server) {
				for tool, check := range map[string]func(r *abi.Result) error{
					"blocks": func(r *abi.Result) error {
						if len(r.Content) != 20_000 {
							return fmt.Errorf("%d blocks, want 20000", len(r.Content))
						}
						return nil
					},
					"values": func(r *abi.Result) error {
						var v struct{ A []int }
						if err := json.Unmarshal(r.StructuredContent, &v); err != nil || len(v.A) != 150_000 {
							return fmt.Errorf("%d values (%v), want 150000", len(v.A), err)
						}
						return nil
					},
					"deep": func(r *abi.Result) error {
						if !bytes.Contains(r.StructuredContent, []byte(strings.Repeat("[", 100))) {
							return fmt.Errorf("structuredContent %.40s…, want 100 nested arrays", r.StructuredContent)
						}
						return nil
					},
				} {
					res, err := s.Call(context.Background(), tool, nil, nil)
					if err == nil {
						err = check(res)
					}
					if err != nil {
						t.Errorf("%s with its limit raised: %v", tool, err)
					}
				}
			})
		})
	})
}

// outputCases are the cases of BenchmarkOutputRSS: blocks.c's tools that
// write the same 61.8 MiB as many small blocks, as few large ones and as
// one, under the default limits on counts and (unlimited) with them
// raised past the result, as they were before there were any.
var outputCases = []struct {
	name, tool     string
	blocks, length int // content blocks and characters of each
	unlimited      bool
}{
	{"2.4M blocks of 1 char, counts unlimited", "flood", 2_400_000, 1, true},
	{"2.4M blocks of 1 char, default limits", "flood", 2_400_000, 1, false},
	{"10000 blocks of 6455 chars, default limits", "wide", 10_000, 6455, false},
	{"1 block of 64799974 chars, default limits", "oneblock", 1, 64_799_974, false},
}

// outputBytes is what blocks.c writes for count blocks of length
// characters.
func outputBytes(count, length int) int {
	return len(`{"content":[`) + count*(len(`{"type":"text","text":""}`)+length) + count - 1 + len(`]}`)
}

// BenchmarkOutputRSS reports, for each case, how much the peak resident
// memory of a process rises per MiB of the guest's output while one
// 2026-07-28 tools/call of the case is served over Streamable HTTP and
// its answer read (and discarded) by the client: the decode, the result
// as the MCP layer renders it, and its encoding. Each measurement runs in
// a fresh process (TestOutputRSSChild), as BenchmarkPeakRSS does. Linux
// only. Run it with
//
//	go test -run '^$' -bench OutputRSS -benchtime 1x ./sandbox_test/
func BenchmarkOutputRSS(b *testing.B) {
	needsProc(b)
	for _, c := range outputCases {
		b.Run(c.name, func(b *testing.B) {
			var perMiB, answered float64
			for b.Loop() {
				f := measureInChild(b, "TestOutputRSSChild", c.name, "")
				if want := map[bool]string{true: "result", false: "tool_error"}[c.unlimited || c.blocks <= 10_000]; len(f) < 4 || f[3] != want {
					b.Fatalf("the call ended with %q, want a %s", f, want)
				}
				perMiB = float64(field(b, f, 1)-field(b, f, 0)) / float64(outputBytes(c.blocks, c.length))
				answered = float64(field(b, f, 2)) / (1 << 20)
			}
			b.ReportMetric(perMiB, "RSS-MiB/output-MiB")
			b.ReportMetric(answered, "MiB-sent")
		})
	}
}

// TestOutputRSSChild is one measurement of BenchmarkOutputRSS; it does
// nothing unless the benchmark started it. It reports the RSS before the
// call, the peak during it, the bytes of the answer, and whether the
// answer was the result or a tool error.
func TestOutputRSSChild(t *testing.T) {
	name, _ := childCase(t)
	for _, c := range outputCases {
		if c.name != name {
			continue
		}
		tp := host.ToolPolicy{MemoryMiB: 16, MaxOutputBytes: 64 << 20}
		if c.unlimited {
			tp.MaxResultBlocks, tp.MaxResultValues = 1<<31-1, 1<<31-1
		}
		s := serveWasm(t, false, &host.Policy{Defaults: tp}, map[string][]byte{"blocks": wasm(t, "blocks")})
		hs := httptest.NewServer(s.Handler())
		defer hs.Close()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": hosttest.ModernParams(map[string]any{"name": c.tool, "arguments": map[string]any{}}, hosttest.NoCapabilities)})
		req, err := http.NewRequest(http.MethodPost, hs.URL+host.HTTPPath, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", hosttest.ModernVersion)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", c.tool)
		base := resetPeak(t)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Read the answer as a stream: its head says which it is, the
		// rest is counted and dropped.
		head := make([]byte, 4096)
		n, _ := io.ReadFull(resp.Body, head)
		rest, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		peak := peakRSS(t)
		if err != nil {
			t.Fatal(err)
		}
		outcome := "result"
		if bytes.Contains(head[:n], []byte(`"isError":true`)) || int64(n)+rest < 1<<20 {
			outcome = "tool_error"
		}
		report(base, peak, int64(n)+rest, outcome)
		t.Logf("HTTP %d, answer starts %.300s", resp.StatusCode, head[:n])
		return
	}
	t.Fatalf("unknown case %q", name)
}
