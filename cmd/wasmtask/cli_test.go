package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

const (
	addWasm  = "../../host/defaulttools/add.wasm"
	demoWasm = "../../host/defaulttools/demo.wasm"
)

func needFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s: %v", p, err)
	}
}

func TestInspect(t *testing.T) {
	needFile(t, addWasm)
	dir := t.TempDir()
	notWasm := filepath.Join(dir, "tool.wat")
	os.WriteFile(notWasm, []byte("(module)"), 0o644)
	noStart := filepath.Join(dir, "lib.wasm")
	os.WriteFile(noStart, []byte("\x00asm\x01\x00\x00\x00"), 0o644) // an empty module

	tests := []struct {
		name    string
		args    []string
		wantErr error
		want    []string
	}{
		{"good module", []string{addWasm}, nil, []string{
			"digest:  sha256:", "abi:     v1", "add — Add", "taskSupport: forbidden",
			"input: a: integer (required), b: integer (required)", "cache: cacheable", "problems: none"}},
		{"not wasm", []string{notWasm}, errProblems, []string{"problems:", "not a WebAssembly module", "hint: pass the compiled .wasm"}},
		{"no _start", []string{noStart}, errProblems, []string{`no "_start" export`, "hint: a tool is a WASI command"}},
		{"flags after the file", []string{addWasm, "--json"}, nil, []string{`"name": "add"`, `"taskSupport": "forbidden"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runInspect(context.Background(), tt.args, &out, &errOut)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("runInspect error = %v, want %v (stderr %s)", err, tt.wantErr, errOut.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// inspect --policy shows what the policy gives the module, by its file
// name and digest, and reports a pin the file does not match.
func TestInspectPolicy(t *testing.T) {
	needFile(t, addWasm)
	b, err := os.ReadFile(addWasm)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	other := "sha256:" + strings.Repeat("0", 64)
	dir := t.TempDir()
	write := func(pin string) string {
		f := filepath.Join(dir, "policy.json")
		doc := `{"maxInstances": 10, "memoryBudgetMiB": 100, "modules": {"add": {"digest": "` + pin + `", "maxInstances": 3,
			"env": {"LANG": "C"}, "tools": {"add": {"memoryMiB": 8}}},
			"other": {"env": {"OTHER": "1"}}}}` // another module's entry is not a problem of this one
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tt := range []struct {
		name    string
		pin     string
		wantErr error
		want    []string
	}{
		{"pin matches", digest, nil, []string{
			"policy:  entry modules.add applies (pinned to this digest)",
			"admits:  at most 3 calls of this module's tools at once",
			"granted: env LANG",
			"server:  10 instances at once, memory budget 100 MiB (the policy's memoryBudgetMiB)",
			"granted: memory 8 MiB", "reserves: 9 MiB of the server's memory budget per call",
			"problems: none"}},
		{"pin differs", other, errProblems, []string{
			"policy:  entry modules.add does NOT apply: it pins " + other,
			"admits:  at most 5 calls of this module's tools at once",
			"granted: memory 64 MiB",
			"modules.add pins digest " + other + " but the file is " + digest}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runInspect(context.Background(), []string{"--policy", write(tt.pin), addWasm}, &out, &errOut)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("runInspect error = %v, want %v (stderr %s)", err, tt.wantErr, errOut.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if tt.wantErr != nil && strings.Contains(out.String(), "granted: env") {
				t.Errorf("a module under a pin it does not match is shown with grants:\n%s", out.String())
			}
		})
	}
}

func TestCall(t *testing.T) {
	needFile(t, addWasm)
	var out, errOut bytes.Buffer
	term := terminal{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	if err := runCall(context.Background(), []string{addWasm, "add", "--args", `{"a":2,"b":40}`}, term); err != nil {
		t.Fatalf("call add: %v (stderr %s)", err, errOut.String())
	}
	var res abi.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not a result: %v\n%s", err, out.String())
	}
	var sum struct{ Sum int }
	if err := json.Unmarshal(res.StructuredContent, &sum); err != nil || sum.Sum != 42 {
		t.Errorf("structuredContent = %s, want sum 42", res.StructuredContent)
	}

	out.Reset()
	err := runCall(context.Background(), []string{addWasm, "add", "--args", `{"a":"x"}`}, term)
	if err == nil || !strings.Contains(err.Error(), "invalid arguments") {
		t.Errorf("call with bad arguments = %v, want invalid arguments", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout after a failed call = %q, want empty", out.String())
	}
	if err := runCall(context.Background(), []string{addWasm}, term); err == nil {
		t.Error("call without TOOL succeeded, want a usage error")
	}
}

// TestCallProgressAndElicit runs the demo's long job: progress lines go to
// stderr (no terminal), the elicitation is answered from stdin.
func TestCallProgressAndElicit(t *testing.T) {
	needFile(t, demoWasm)
	tests := []struct {
		answer        string
		wantConfirmed bool
	}{
		{"yes\n", true},
		{"\n", false}, // an empty first answer declines
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		term := terminal{stdin: strings.NewReader(tt.answer), stdout: &out, stderr: &errOut}
		err := runCall(context.Background(), []string{demoWasm, "long_job", "--args", `{"steps":2,"delay_ms":1}`}, term)
		if err != nil && !errors.Is(err, errToolError) {
			t.Fatalf("answer %q: %v (stderr %s)", tt.answer, err, errOut.String())
		}
		for _, w := range []string{"progress 1/2", "The tool asks: "} {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("answer %q: stderr lacks %q:\n%s", tt.answer, w, errOut.String())
			}
		}
		var res abi.Result
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("answer %q: stdout is not a result: %v\n%s", tt.answer, err, out.String())
		}
		var sc struct{ Confirmed bool }
		json.Unmarshal(res.StructuredContent, &sc)
		if sc.Confirmed != tt.wantConfirmed {
			t.Errorf("answer %q: confirmed = %v, want %v (%s)", tt.answer, sc.Confirmed, tt.wantConfirmed, out.String())
		}
	}
}

func TestProgressBarOnTerminal(t *testing.T) {
	var b bytes.Buffer
	bar := &progressBar{w: &b, tty: true}
	bar.progress(1, 2, "half")
	if got, want := b.String(), "\r\033[K[###############...............]  50% half"; got != want {
		t.Errorf("bar = %q, want %q", got, want)
	}
	bar.line("[info] hi")
	if !strings.HasSuffix(b.String(), "\r\033[K[info] hi\n") {
		t.Errorf("a log line does not clear the bar first: %q", b.String())
	}
}
