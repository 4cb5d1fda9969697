package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
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
