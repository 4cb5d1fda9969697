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
	"github.com/wasmtask/wasmtask/host/hosttest"
)

const (
	addWasm  = "../../host/defaulttools/add.wasm"
	demoWasm = "../../host/defaulttools/demo.wasm"
)

// needFile fails t unless the checked-in module p exists: a missing one is
// a broken checkout, not a reason to skip.
func needFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("a checked-in module is missing (examples/build.sh rebuilds the default tools): %v", err)
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
			"input: a: integer (required), b: integer (required)", "cache: cacheable", "result cache: results reused for 10m0s", "problems: none"}},
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
			"admits:  at most 3 calls of this module's tools at once, reserving at most 25 MiB together",
			"granted: env LANG",
			"server:  10 instances at once, memory budget 100 MiB (the policy's memoryBudgetMiB)",
			"granted: memory 8 MiB", "reserves: 11 MiB of the server's memory budget per call",
			"problems: none"}},
		{"pin differs", other, errProblems, []string{
			"policy:  entry modules.add does NOT apply: it pins " + other,
			"admits:  at most 2 calls of this module's tools at once, reserving at most 25 MiB together", // a quarter of the server's, by default
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
	bar := &progressBar{w: visibleWriter{&b}, raw: &b, tty: true}
	bar.progress(1, 2, "half")
	if got, want := b.String(), "\r\033[K[###############...............]  50% half"; got != want {
		t.Errorf("bar = %q, want %q", got, want)
	}
	bar.line("[info] hi")
	if !strings.HasSuffix(b.String(), "\r\033[K[info] hi\n") {
		t.Errorf("a log line does not clear the bar first: %q", b.String())
	}
	// The guest's message cannot draw on the terminal; the bar can.
	b.Reset()
	bar.progress(2, 2, "done\033[2J")
	if got, want := b.String(), "\r\033[K[##############################] 100% done\\u001b[2J"; got != want {
		t.Errorf("bar = %q, want %q", got, want)
	}
}

// TestVisible checks what reaches an operator's terminal from a guest.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\tindented":    "plain text\n\tindented",
		"\x1b[31mred\x1b[0m":        `\u001b[31mred\u001b[0m`,
		"bell\a back\b cr\r":        `bell\u0007 back\u0008 cr\u000d`,
		"del\x7f c1\u009b":          `del\u007f c1\u009b`,
		"evil\u202etxt.exe":         `evil\u202etxt.exe`,
		"zero\u200bwidth":           `zero\u200bwidth`,
		"family 👨\u200d👩\u200d👧 ok": "family 👨\u200d👩\u200d👧 ok",
		"not utf-8 \xff\xfe":        `not utf-8 \xff\xfe`,
		"accents é ü and 漢字 stay":   "accents é ü and 漢字 stay",
	} {
		var b bytes.Buffer
		if _, err := (visibleWriter{&b}).Write([]byte(in)); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("visible(%q) = %q, want %q", in, b.String(), want)
		}
	}
	// Inside a JSON string the escapes keep the document valid.
	var b bytes.Buffer
	_ = json.NewEncoder(visibleWriter{&b}).Encode(map[string]string{"t": "a\x1b\x7f\u009b\u202e"})
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["t"] != "a\x1b\x7f\u009b\u202e" {
		t.Errorf("escaped JSON %s: %v, decoded %q", b.Bytes(), err, back["t"])
	}
}

// TestGuestTextCannotDriveTheTerminal runs inspect and call on a module
// whose title, description, progress, log and result carry terminal escapes:
// none reaches the operator's terminal as a raw control character.
func TestGuestTextCannotDriveTheTerminal(t *testing.T) {
	wasm := hosttest.Wasm(t, filepath.Join("testdata", "ansi.wat"))
	file := filepath.Join(t.TempDir(), "ansi.wasm")
	if err := os.WriteFile(file, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	raw := func(name string, b []byte) {
		t.Helper()
		if i := bytes.IndexFunc(b, func(r rune) bool { return r == 0x1b || r == 0x07 || r == '\u202e' }); i >= 0 {
			t.Errorf("%s shows a raw control character at byte %d: %q", name, i, b)
		}
	}

	var out, errOut bytes.Buffer
	if err := runInspect(context.Background(), []string{"--cache-dir", "", file}, &out, &errOut); err != nil {
		t.Fatalf("inspect: %v\n%s%s", err, out.Bytes(), errOut.Bytes())
	}
	raw("inspect", out.Bytes())
	if !strings.Contains(out.String(), `T\u001b[2J`) || !strings.Contains(out.String(), `evil\u202etxt.exe`) {
		t.Errorf("inspect does not show the escaped title and description:\n%s", out.Bytes())
	}

	out.Reset()
	term := terminal{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	if err := runCall(context.Background(), []string{"--cache-dir", "", file, "ansi"}, term); err != nil {
		t.Fatalf("call: %v\n%s", err, errOut.Bytes())
	}
	raw("call stdout", out.Bytes())
	raw("call stderr", errOut.Bytes())
	for _, want := range []string{`P\u001b[2J`, `L\u001b[31m`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("call stderr lacks %s:\n%s", want, errOut.Bytes())
		}
	}
	var res abi.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Content) != 1 || res.Content[0].Text != "R\x1b]0;pwned\a" {
		t.Errorf("call stdout is not the result JSON with its text intact (%v): %s", err, out.Bytes())
	}
}
