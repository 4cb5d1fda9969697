package mcpserver

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/taskengine"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden runs each testdata/*.txtar script over a stdio session. The
// "in" section is the script, "out" the expected exchange:
//
//	{json}            send; if it is a request, wait for its response
//	!nowait {json}    send, do not wait
//	!expect-one text  send a line (maybe malformed) and wait for one message
//	!await id         wait for the response to an earlier !nowait request
//	!elicit {json}    answer later elicitation/create requests with this result
//	!release          let one "slow" call finish
//	!wait-started     wait until a "slow" call has started
//	!wait-cancelled   wait until a "slow" call saw its context end
//
// Task IDs become TASK1, TASK2… (use those names in sent lines), timestamps
// <time>, cursors <cursor>. notifications/tasks/status is left out (its
// timing is not deterministic; TestStatusNotifications covers it).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := parseTxtar(string(data))
			got := runScript(t, sections["in"])
			if *update {
				out := sections["comment"] + "-- in --\n" + sections["in"] + "-- out --\n" + got
				if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(sections["out"], got); diff != "" {
				t.Errorf("exchange differs from %s (-want +got):\n%s", file, diff)
			}
			// Every message the server wrote is fit for a client: no Go
			// package, type or configuration field in its text.
			for _, line := range strings.Split(got, "\n") {
				if msg, ok := strings.CutPrefix(line, "<- "); ok {
					if err := hosttest.CheckClientText(json.RawMessage(msg)); err != nil {
						t.Errorf("%s: %v", file, err)
					}
				}
			}
		})
	}
}

// parseTxtar splits a txtar archive into its comment and named sections.
func parseTxtar(s string) map[string]string {
	out := map[string]string{}
	name := "comment"
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") {
			out[name] = b.String()
			b.Reset()
			name = strings.TrimSuffix(strings.TrimPrefix(trimmed, "-- "), " --")
			continue
		}
		b.WriteString(line)
	}
	out[name] = b.String()
	return out
}

func runScript(t *testing.T, script string) string {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	n := &normalizer{t: t, ids: map[string]string{}}
	elicitResult := `{"action":"accept","content":{"color":"blue"}}`
	var out strings.Builder
	record := func(prefix, raw string) {
		fmt.Fprintf(&out, "%s %s\n", prefix, n.norm(canonical(raw)))
	}
	// receive reads one message, answers elicitations, and reports whether
	// it is the response with id want.
	receive := func(want string) bool {
		m, raw, ok := c.nextRaw()
		if !ok {
			t.Fatalf("server closed the connection; exchange so far:\n%s", out.String())
		}
		if m["method"] == methodTaskStatus {
			return false
		}
		record("<-", raw)
		if m["method"] == "elicitation/create" {
			id, _ := json.Marshal(m["id"])
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, elicitResult)
			record("->", line)
			c.send(line)
			return false
		}
		_, isReq := m["method"]
		return !isReq && (want == "*" || idOf(m) == want)
	}
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "!release":
			ts.tools.release <- struct{}{}
			fmt.Fprintf(&out, "-- release slow\n")
		case "!wait-started":
			<-ts.tools.started
			fmt.Fprintf(&out, "-- slow started\n")
		case "!wait-cancelled":
			cause := <-ts.tools.cancelled
			fmt.Fprintf(&out, "-- slow saw its context end: %s\n", cause)
		case "!await":
			fmt.Fprintf(&out, "-- await %s\n", rest)
			for !receive(rest) {
			}
		case "!elicit":
			elicitResult = rest
		case "!nowait":
			record("->", n.denorm(rest))
			c.send(n.denorm(rest))
		case "!expect-one":
			fmt.Fprintf(&out, "-> %s\n", rest)
			c.send(rest)
			for !receive("*") {
			}
		default:
			sent := n.denorm(line)
			record("->", sent)
			c.send(sent)
			var m map[string]any
			if json.Unmarshal([]byte(sent), &m) != nil || m["method"] == nil || m["id"] == nil {
				continue // a notification: nothing to wait for
			}
			for !receive(idOf(m)) {
			}
		}
	}
	return out.String()
}
