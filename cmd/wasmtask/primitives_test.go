package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// primModules writes the ABI 1.2 test modules to a directory and returns
// their files: prims serves the resource test://static, the template
// test://items/{id} and the prompt greet (argument who, completed), and no
// tool (noTools); mixed serves the tool hello, the resources mem://logo (a blob,
// every display member) and mem://gone (the module answers "not found"),
// and the prompt review (argument file required).
func primModules(t *testing.T) (prims, mixed string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, wasm []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	return write("prims.wasm", noTools(t, hosttest.Wasm(t, "../../host/internal/wasmrt/testdata/prims.wat"))),
		write("mixed.wasm", hosttest.Wasm(t, filepath.Join("testdata", "mixed.wat")))
}

// noTools is prims.wat's module without its tool: its manifest's tools
// become an empty array, blanks keeping the manifest's length.
func noTools(t *testing.T, b []byte) []byte {
	t.Helper()
	const decl = `"tools":[{"name":"hello","inputSchema":{"type":"object"}}]`
	if bytes.Count(b, []byte(decl)) != 1 {
		t.Fatalf("prims.wat no longer declares %s", decl)
	}
	return bytes.Replace(b, []byte(decl), []byte(`"tools":[`+strings.Repeat(" ", len(decl)-len(`"tools":[]`))+`]`), 1)
}

// runCmd runs one of the commands in process and returns its streams.
func runCmd(run func(context.Context, []string, io.Writer, io.Writer) error, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// inspect shows a module's resources, templates and prompts beside its
// tools, and the limits their requests run under; a module that serves no
// tool is served all the same.
func TestInspectPrimitives(t *testing.T) {
	prims, mixed := primModules(t)
	for _, tt := range []struct {
		name string
		file string
		want []string
	}{
		{"no tools", prims, []string{
			"digest:  sha256:", "tools:   0", "resources: 1", "resource templates: 1", "prompts: 1",
			`policy:  no entry for module "prims"`, "requests of this module at once",
			"run under the module's default limits)\n    granted: memory 64 MiB, timeout 30s,", "concurrent requests",
			"\n  resource test://static\n    name: static\n    mimeType: text/plain\n",
			"\n  template test://items/{id}\n    name: item\n    completes: id\n",
			"\n  prompt greet\n    arguments: who (completes)\n",
			"problems: none"}},
		{"tools and more", mixed, []string{
			"tools:   1", "resources: 2", "prompts: 1", "calls of this module's tools at once",
			"\n  hello\n", "run under the module's default limits)\n    granted: memory 64 MiB, timeout 30s,",
			"\n  resource mem://gone\n    name: gone\n",
			"\n  resource mem://logo — Logo\n    name: logo\n    mimeType: image/png\n    description: The logo.\n" +
				"    annotations: audience user; priority 0.5\n    cache: cacheable, ttl 1000 ms\n    size: 4 bytes\n",
			"\n  prompt review — Review\n    description: Reviews a file.\n    arguments: file (required), tone\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := runCmd(runInspect, tt.file)
			if err != nil {
				t.Fatalf("inspect: %v\n%s%s", err, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if out, _, _ := runCmd(runInspect, addWasm); strings.Contains(out, "resources") || strings.Contains(out, "prompt") {
		t.Errorf("a module of tools alone is shown with resources or prompts:\n%s", out)
	}

	out, errOut, err := runCmd(runInspect, "--json", prims)
	if err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, errOut)
	}
	var doc struct {
		Tools     []json.RawMessage
		Resources []struct {
			URI    string
			Module string
		}
		ResourceTemplates []struct{ URITemplate string }
		Prompts           []struct {
			Name      string
			Arguments []abi.PromptArgument
			Policy    struct{ MemoryMiB int }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, out)
	}
	if len(doc.Tools) != 0 || len(doc.Resources) != 1 || doc.Resources[0].URI != "test://static" || doc.Resources[0].Module != "prims" ||
		len(doc.ResourceTemplates) != 1 || doc.ResourceTemplates[0].URITemplate != "test://items/{id}" ||
		len(doc.Prompts) != 1 || doc.Prompts[0].Name != "greet" || len(doc.Prompts[0].Arguments) != 1 || !doc.Prompts[0].Arguments[0].Complete ||
		doc.Prompts[0].Policy.MemoryMiB != 64 {
		t.Errorf("inspect --json = %+v, want no tools, test://static of prims, test://items/{id}, greet completing who under 64 MiB:\n%s", doc, out)
	}
}

// primCase is one run of read, prompt or complete: what it prints on
// stdout (JSON, compared after decoding both), or the error it fails
// with.
type primCase struct {
	name    string
	args    []string
	want    string // the answer JSON; "" when none is printed
	wantErr error  // errors.Is
	errText string // in the error's text
}

func (tt primCase) run(t *testing.T, cmd func(context.Context, []string, io.Writer, io.Writer) error) {
	t.Helper()
	t.Run(tt.name, func(t *testing.T) {
		out, errOut, err := runCmd(cmd, tt.args...)
		switch {
		case tt.wantErr == nil && tt.errText == "" && err != nil:
			t.Fatalf("error %v, want none (stderr %s)", err, errOut)
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Fatalf("error %v, want %v", err, tt.wantErr)
		case tt.errText != "" && (err == nil || !strings.Contains(err.Error(), tt.errText)):
			t.Fatalf("error %v, want one saying %q", err, tt.errText)
		}
		if tt.want == "" {
			if out != "" {
				t.Errorf("stdout = %q, want empty", out)
			}
			return
		}
		var got, want any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, out)
		}
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatal(err)
		}
		if g, w := mustJSON(got), mustJSON(want); g != w {
			t.Errorf("stdout = %s, want %s", g, w)
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRead(t *testing.T) {
	prims, mixed := primModules(t)
	for _, tt := range []primCase{
		{name: "resource", args: []string{prims, "test://static"}, want: `{"contents":[{"uri":"test://static","text":"static"}]}`},
		{name: "by template", args: []string{"--timeout", "5s", prims, "test://items/7"}, want: `{"contents":[{"uri":"test://static","text":"static"}]}`},
		{name: "blob", args: []string{mixed, "mem://logo"}, want: `{"contents":[{"uri":"mem://logo","mimeType":"image/png","blob":"iVBORw=="}]}`},
		{name: "the module says not found", args: []string{mixed, "mem://gone"}, wantErr: errAnswerError,
			want: `{"contents":null,"error":{"code":-32002,"message":"gone for good"}}`},
		{name: "nothing serves it", args: []string{prims, "test://nothing"}, errText: `module prims serves no resource "test://nothing"`},
		{name: "not a URI", args: []string{prims, "no scheme"}, errText: "not a resource URI"},
		{name: "a wrong answer", args: []string{prims, "test://items/x"}, errText: "bad output"},
		{name: "no URI", args: []string{prims}, errText: "want FILE.wasm and URI"},
	} {
		tt.run(t, runRead)
	}
}

func TestPrompt(t *testing.T) {
	prims, mixed := primModules(t)
	for _, tt := range []primCase{
		{name: "prompt", args: []string{prims, "greet", "--arg", "who=me"}, want: `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`},
		{name: "required argument given", args: []string{"--arg", "file=a.go", mixed, "review", "--arg", "tone=kind"},
			want: `{"description":"Review","messages":[{"role":"user","content":{"type":"text","text":"Review it."}}]}`},
		{name: "required argument missing", args: []string{mixed, "review", "--arg", "tone=kind"}, errText: `missing required argument "file"`},
		{name: "unknown prompt", args: []string{prims, "nothing"}, errText: `module prims has no prompt "nothing"`},
		{name: "argument without value", args: []string{prims, "greet", "--arg", "who"}, errText: "want NAME=VALUE"},
		{name: "argument twice", args: []string{prims, "greet", "--arg", "who=a", "--arg", "who=b"}, errText: `argument "who" given twice`},
	} {
		tt.run(t, runPrompt)
	}
}

func TestComplete(t *testing.T) {
	prims, mixed := primModules(t)
	const values = `{"values":["one","two"],"total":2}`
	for _, tt := range []primCase{
		{name: "prompt argument", args: []string{prims, "prompt:greet", "who", "o"}, want: values},
		{name: "template variable", args: []string{prims, "template:test://items/{id}", "id", "--arg", "x=y"}, want: values},
		{name: "argument not completed", args: []string{prims, "prompt:greet", "other"}, errText: `prompt greet does not declare that it completes "other" (it completes: who)`},
		{name: "prompt completing nothing", args: []string{mixed, "prompt:review", "file"}, errText: "(it completes: none)"},
		{name: "unknown prompt", args: []string{prims, "prompt:nothing", "who"}, errText: `module prims has no prompt "nothing"`},
		{name: "unknown template", args: []string{prims, "template:test://{x}", "x"}, errText: `module prims has no resource template "test://{x}"`},
		{name: "unknown kind", args: []string{prims, "tool:greet", "who"}, errText: "want prompt:NAME or template:URITEMPLATE"},
		{name: "no argument", args: []string{prims, "prompt:greet"}, errText: "want FILE.wasm and prompt:NAME|template:URITEMPLATE ARG [VALUE], got 2"},
	} {
		tt.run(t, runComplete)
	}
}
