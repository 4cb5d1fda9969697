package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// The AssemblyScript example (examples/assemblyscript: the bindings in
// assembly/wasmtask.ts and the caesar tool), built from source with
// ABI.md's asc command and the WASI shim, and called through the host.

// caesar is the cipher the example implements, for the expected results.
func caesar(s string, shift int) string {
	shift = (shift%26 + 26) % 26
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+rune(shift))%26
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+rune(shift))%26
		}
		return r
	}, s)
}

func TestAssemblyScriptThroughHost(t *testing.T) {
	s := serveExample(t, exampleFor(t, "assemblyscript"))
	if got, want := fmt.Sprint(s.toolSupport()), "map[caesar:forbidden]"; got != want {
		t.Errorf("tools/list: got %v, want %s", got, want)
	}
	tests := []struct {
		text     string
		shift    int
		wantText string
	}{
		{"Hello, World!", 3, "Khoor, Zruog!"},
		{"abc XYZ", -1, "zab WXY"},
		{"Zz", 1000, "Ll"}, // 1000 = 38×26 + 12
		{"", 5, ""},
		// Escapes, accents, a surrogate pair and control characters
		// travel through the shim's UTF-8 and the bindings' JSON intact.
		{"h\u00e9\U0001F600\n\"<&>\t\\ \u0001 xyz", 2, "j\u00e9\U0001F600\n\"<&>\t\\ \u0001 zab"},
		{strings.Repeat("The quick brown fox. ", 20000), 13, caesar(strings.Repeat("The quick brown fox. ", 20000), 13)},
	}
	for i, tt := range tests {
		if got := caesar(tt.text, tt.shift); got != tt.wantText {
			t.Fatalf("the test's own cipher: caesar(%.20q, %d) = %.20q, want %.20q", tt.text, tt.shift, got, tt.wantText)
		}
		token := fmt.Sprintf("caesar-%d", i)
		r := s.callTool("caesar", map[string]any{"text": tt.text, "shift": tt.shift}, token)
		if r.IsError || r.Text() != tt.wantText {
			t.Errorf("caesar(%.20q, %d): got %.20q (isError %v), want %.20q", tt.text, tt.shift, r.Text(), r.IsError, tt.wantText)
		}
		want, _ := json.Marshal(map[string]any{"shift": (tt.shift%26 + 26) % 26, "text": tt.wantText})
		if got := canonical(t, r.StructuredContent); got != canonical(t, want) {
			t.Errorf("caesar(%.20q, %d): structuredContent %.80s, want %.80s", tt.text, tt.shift, got, want)
		}
		if ps := s.progress(token); len(ps) != 1 || ps[0].Message != "done" {
			t.Errorf("caesar(%.20q, %d): progress %+v, want one report \"done\"", tt.text, tt.shift, ps)
		}
	}
	wantArgumentsError(t, "caesar with shift 1.5", "caesar", s.callTool("caesar", map[string]any{"text": "a", "shift": 1.5}, ""))
	wantArgumentsError(t, "caesar without shift", "caesar", s.callTool("caesar", map[string]any{"text": "a"}, ""))
}

// TestAssemblyScriptPrimitivesThroughHost reads caesar's resource and gets
// its prompt over MCP: the bindings' Module dispatches read and prompt
// requests to their handlers and writes their answers and errors.
func TestAssemblyScriptPrimitivesThroughHost(t *testing.T) {
	s := serveExample(t, exampleFor(t, "assemblyscript"))
	if got := s.resources(); asJSON(got) != `["caesar://about"]` {
		t.Errorf("resources/list: got %v, want caesar://about", got)
	}
	if got := s.prompts(); asJSON(got) != `["explain"]` {
		t.Errorf("prompts/list: got %v, want explain", got)
	}
	about := s.readResource("caesar://about")
	if len(about) != 1 || about[0].URI != "caesar://about" || about[0].MIMEType != "text/plain" ||
		!strings.Contains(about[0].Text, "with shift 3, A becomes D and z becomes c") {
		t.Errorf("resources/read caesar://about: got %s", asJSON(about))
	}

	for _, tt := range []struct {
		text, shift string
		wantShift   int // the shift in 0..25
	}{
		{"Hello, World!", "3", 3},
		// Escapes, accents and emoji reach the prompt and come back intact.
		{"h\u00e9\U0001F600 \"zebra\"\n", "-1", 25},
	} {
		n := strconv.Itoa(tt.wantShift)
		wantDesc := "How shift " + n + " enciphers a text"
		want := "Explain step by step how a Caesar shift of " + n + " turns \"" + tt.text + "\" into \"" + caesar(tt.text, tt.wantShift) + "\"."
		p := s.getPrompt("explain", map[string]string{"text": tt.text, "shift": tt.shift})
		if p.Description != wantDesc || len(p.Messages) != 1 || p.Messages[0].Role != "user" || p.Messages[0].Content.Text != want {
			t.Errorf("prompts/get explain %q %s: got %s, want %q: %q", tt.text, tt.shift, asJSON(p), wantDesc, want)
		}
	}
	for _, args := range []map[string]string{{"text": "a", "shift": "1.5"}, {"text": "a", "shift": "1001"}, {"text": "a"}} {
		if m := s.call("prompts/get", map[string]any{"name": "explain", "arguments": args}); m.Code() != -32602 {
			t.Errorf("prompts/get explain %v: got %s, want error -32602", args, m.Raw)
		}
	}
}

func TestAssemblyScriptCall(t *testing.T) {
	srv := serveBuilt(t, exampleFor(t, "assemblyscript"))
	var rec recorder
	// The host compacts the client's spacing; 3.0 is an integer to JSON Schema.
	res, err := srv.Call(context.Background(), "caesar", json.RawMessage(` { "shift" : 3.0, "text" : "Veni, vidi, vici" } `), &rec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.StructuredContent), `{"text":"Yhql, ylgl, ylfl","shift":3}`; got != want || res.IsError {
		t.Errorf("caesar: got %s (%+v), want %s", got, res, want)
	}
	rec.check(t, "log", &rec.logs, fmt.Sprintf("%d shifted 16 UTF-16 code units by 3", abi.LogInfo))
	rec.check(t, "progress", &rec.progress, "16/16 done")
}
