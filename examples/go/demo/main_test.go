package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/abi/guest"
)

// These tests run the handlers natively through guest.Serve (where
// elicitation is unsupported); examples/host_test.go runs the built module
// through the host.

func call(t *testing.T, req string) *abi.Result {
	t.Helper()
	var out bytes.Buffer
	if err := guest.Serve(strings.NewReader(req), &out, wordCount, slowCount, longJob); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	res, err := abi.DecodeResult(out.Bytes(), abi.ResultLimits{})
	if err != nil {
		t.Fatalf("DecodeResult(%s): %v", out.Bytes(), err)
	}
	return res
}

func TestDescribe(t *testing.T) {
	b, err := guest.Describe(wordCount, slowCount, longJob)
	if err != nil {
		t.Fatal(err)
	}
	m, err := abi.DecodeManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"word_count": abi.TaskForbidden, "slow_count": abi.TaskOptional, "long_job": abi.TaskRequired}
	for _, tool := range m.Tools {
		if want[tool.Name] != tool.TaskSupport {
			t.Errorf("%s: taskSupport %q, want %q", tool.Name, tool.TaskSupport, want[tool.Name])
		}
	}
}

func TestWordCount(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{"", `{"words":0,"lines":0,"chars":0}`},
		{"one", `{"words":1,"lines":1,"chars":3}`},
		{"a b\nc\n", `{"words":3,"lines":2,"chars":6}`},
		{"héllo  wörld", `{"words":2,"lines":1,"chars":12}`},
	}
	for _, tt := range tests {
		req := `{"abi":1,"method":"call","tool":"word_count","arguments":{"text":` + strings.ReplaceAll(strings.ReplaceAll(`"`+tt.text+`"`, "\n", `\n`), "\t", `\t`) + `}}`
		res := call(t, req)
		if got := string(res.StructuredContent); got != tt.want || res.IsError {
			t.Errorf("word_count(%q) = %s (isError %v), want %s", tt.text, got, res.IsError, tt.want)
		}
	}
}

func TestCountArgumentChecks(t *testing.T) {
	for _, args := range []string{`{"steps":0}`, `{"steps":10001}`, `{"steps":1,"delay_ms":-1}`, `{"steps":"x"}`} {
		for _, tool := range []string{"slow_count", "long_job"} {
			res := call(t, `{"abi":1,"method":"call","tool":"`+tool+`","arguments":`+args+`}`)
			if !res.IsError {
				t.Errorf("%s(%s): isError false, want a tool error", tool, args)
			}
		}
	}
}

func TestLongJobWithoutElicitation(t *testing.T) {
	res := call(t, `{"abi":1,"method":"call","tool":"long_job","arguments":{"steps":2,"delay_ms":1}}`)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "nobody can answer") {
		t.Errorf("got %+v, want a tool error saying nobody can answer", res)
	}
}
