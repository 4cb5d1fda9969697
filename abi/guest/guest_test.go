package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// fakeHost records host function calls and answers elicit with a fixed reply.
type fakeHost struct {
	calls     []string
	noLog     bool
	reply     string
	replyCode int32
	elicited  []string
}

func (h *fakeHost) progress(done, total float64, msg string) {
	h.calls = append(h.calls, fmt.Sprintf("progress %g/%g %s", done, total, msg))
}
func (h *fakeHost) status(msg string) { h.calls = append(h.calls, "status "+msg) }
func (h *fakeHost) log(level int32, msg string) bool {
	if h.noLog {
		return false
	}
	h.calls = append(h.calls, fmt.Sprintf("log %d %s", level, msg))
	return true
}
func (h *fakeHost) elicit(req []byte) ([]byte, int32) {
	h.elicited = append(h.elicited, string(req))
	if h.replyCode < 0 {
		return nil, h.replyCode
	}
	return []byte(h.reply), 0
}

func (h *fakeHost) elicitAll(req []byte) ([]byte, int32) { return h.elicit(req) }
func (h *fakeHost) beginTask() bool                      { h.calls = append(h.calls, "begin_task"); return true }
func (h *fakeHost) sample(req []byte) ([]byte, int32)    { return h.elicit(req) }
func (h *fakeHost) roots() ([]byte, int32)               { return h.elicit(nil) }

type wcArgs struct {
	Text string `json:"text"`
}

type wcOut struct {
	Words int `json:"words"`
}

var testTools = []Tool{
	{
		Name:        "word_count",
		Description: "Counts words.",
		InputSchema: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		Handler: Handle(func(c *Call, in wcArgs) (Result, error) {
			return Structured(wcOut{Words: len(strings.Fields(in.Text))})
		}),
	},
	{
		Name:        "fail",
		TaskSupport: abi.TaskOptional,
		Handler: Handle(func(c *Call, in struct{}) (Result, error) {
			return Text("ignored"), errors.New("the job failed")
		}),
	},
	{
		Name: "panic",
		Handler: func(c *Call, args json.RawMessage) (Result, error) {
			panic("boom")
		},
	},
	{
		Name: "empty",
		Handler: func(c *Call, args json.RawMessage) (Result, error) {
			return Result{}, nil
		},
	},
	{
		Name: "args",
		Handler: func(c *Call, args json.RawMessage) (Result, error) {
			return Text(string(args)), nil
		},
	},
	{
		Name:        "report",
		TaskSupport: abi.TaskRequired,
		Handler: func(c *Call, args json.RawMessage) (Result, error) {
			c.Progress(1, 2, "half")
			c.Status("working hard")
			c.Logf(LevelWarning, "tool %s", c.Tool())
			return Text("done"), nil
		},
	},
}

func serveString(t *testing.T, h host, req string, tools ...Tool) (string, string, error) {
	t.Helper()
	var out, log bytes.Buffer
	err := serve(strings.NewReader(req), &out, &log, h, Module{Tools: tools})
	return out.String(), log.String(), err
}

func TestServeCall(t *testing.T) {
	tests := []struct {
		name    string
		req     string
		want    string
		isError bool
	}{
		{"typed", `{"abi":1,"method":"call","tool":"word_count","arguments":{"text":"a b  c"}}`,
			`{"content":[{"type":"text","text":"{\"words\":3}"}],"structuredContent":{"words":3}}`, false},
		{"handler error", `{"abi":1,"method":"call","tool":"fail","arguments":{}}`,
			`{"content":[{"type":"text","text":"the job failed"}],"isError":true}`, true},
		{"panic", `{"abi":1,"method":"call","tool":"panic"}`,
			`{"content":[{"type":"text","text":"tool \"panic\" failed: panic: boom"}],"isError":true}`, true},
		{"nil content becomes empty", `{"abi":1,"method":"call","tool":"empty"}`,
			`{"content":[]}`, false},
		{"absent arguments are {}", `{"abi":1,"method":"call","tool":"args"}`,
			`{"content":[{"type":"text","text":"{}"}]}`, false},
		{"null arguments are {}", `{"abi":1,"method":"call","tool":"args","arguments":null}`,
			`{"content":[{"type":"text","text":"{}"}]}`, false},
		{"unknown tool", `{"abi":1,"method":"call","tool":"nope","arguments":{}}`,
			`{"content":[{"type":"text","text":"unknown tool \"nope\""}],"isError":true}`, true},
		{"arguments of the wrong type", `{"abi":1,"method":"call","tool":"word_count","arguments":{"text":7}}`,
			"", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := serveString(t, &fakeHost{}, tt.req, testTools...)
			if err != nil {
				t.Fatalf("serve: %v", err)
			}
			res, err := abi.DecodeResult([]byte(got), abi.ResultLimits{})
			if err != nil {
				t.Fatalf("the host would refuse the result %s: %v", got, err)
			}
			if res.IsError != tt.isError {
				t.Errorf("isError = %v, want %v (%s)", res.IsError, tt.isError, got)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestServeArgumentsErrorNamesTool(t *testing.T) {
	got, _, err := serveString(t, &fakeHost{}, `{"abi":1,"method":"call","tool":"word_count","arguments":{"text":7}}`, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "invalid arguments for tool") || !strings.Contains(got, `word_count`) {
		t.Errorf("got %s, want a message naming invalid arguments and the tool", got)
	}
}

func TestServePanicLogsStack(t *testing.T) {
	_, log, err := serveString(t, &fakeHost{}, `{"abi":1,"method":"call","tool":"panic"}`, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "panic in tool \"panic\": boom") || !strings.Contains(log, "goroutine") {
		t.Errorf("stderr = %q, want the panic and a stack", log)
	}
}

func TestServeDescribe(t *testing.T) {
	got, _, err := serveString(t, &fakeHost{}, `{"abi":1,"method":"describe"}`, testTools...)
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	m, err := abi.DecodeManifest([]byte(got))
	if err != nil {
		t.Fatalf("the host would refuse the manifest %s: %v", got, err)
	}
	if len(m.Tools) != len(testTools) {
		t.Fatalf("got %d tools, want %d", len(m.Tools), len(testTools))
	}
	wantSupport := []string{abi.TaskForbidden, abi.TaskOptional, abi.TaskForbidden, abi.TaskForbidden, abi.TaskForbidden, abi.TaskRequired}
	for i, tool := range m.Tools {
		if tool.Name != testTools[i].Name {
			t.Errorf("tool %d: name %q, want %q", i, tool.Name, testTools[i].Name)
		}
		if tool.TaskSupport != wantSupport[i] {
			t.Errorf("tool %q: taskSupport %q, want %q", tool.Name, tool.TaskSupport, wantSupport[i])
		}
	}
	if got, want := string(m.Tools[0].InputSchema), testTools[0].InputSchema; got != want {
		t.Errorf("inputSchema = %s, want %s", got, want)
	}
}

func TestServeRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  string
		want error
	}{
		{"not JSON", `hello`, ErrRequest},
		{"empty", ``, ErrRequest},
		{"other version", `{"abi":2,"method":"describe"}`, abi.ErrVersion},
		{"no version", `{"method":"describe"}`, abi.ErrVersion},
		{"unknown method", `{"abi":1,"method":"run"}`, ErrRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := serveString(t, &fakeHost{}, tt.req, testTools...)
			if !errors.Is(err, tt.want) {
				t.Errorf("got error %v, want %v", err, tt.want)
			}
			if out != "" {
				t.Errorf("wrote %q, want nothing on stdout", out)
			}
		})
	}
}

func TestDescribeRefusesBadTools(t *testing.T) {
	h := func(c *Call, args json.RawMessage) (Result, error) { return Text(""), nil }
	tests := []struct {
		name  string
		tools []Tool
		want  string
	}{
		{"no tools", nil, "declares no tools"},
		{"no handler", []Tool{{Name: "x"}}, "no Handler"},
		{"bad name", []Tool{{Name: "a b", Handler: h}}, "invalid name"},
		{"duplicate", []Tool{{Name: "a", Handler: h}, {Name: "a", Handler: h}}, "duplicate"},
		{"schema not JSON", []Tool{{Name: "a", InputSchema: `{`, Handler: h}}, "InputSchema is not valid JSON"},
		{"schema not object", []Tool{{Name: "a", InputSchema: `{"type":"string"}`, Handler: h}}, "inputSchema"},
		{"output schema not JSON", []Tool{{Name: "a", OutputSchema: `[`, Handler: h}}, "OutputSchema is not valid JSON"},
		{"bad task support", []Tool{{Name: "a", TaskSupport: "sometimes", Handler: h}}, "taskSupport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Describe(tt.tools...)
			if !errors.Is(err, ErrTool) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want ErrTool mentioning %q", err, tt.want)
			}
		})
	}
}

func TestCallReports(t *testing.T) {
	h := &fakeHost{}
	got, _, err := serveString(t, h, `{"abi":1,"method":"call","tool":"report","arguments":{}}`, testTools...)
	if err != nil || got != `{"content":[{"type":"text","text":"done"}]}` {
		t.Fatalf("got %s, %v", got, err)
	}
	want := []string{"progress 1/2 half", "status working hard", "log 2 tool report"}
	if fmt.Sprint(h.calls) != fmt.Sprint(want) {
		t.Errorf("host calls = %q, want %q", h.calls, want)
	}
}

func TestLogFallsBackToStderr(t *testing.T) {
	_, log, err := serveString(t, &fakeHost{noLog: true}, `{"abi":1,"method":"call","tool":"report"}`, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	if log != "warning: tool report\n" {
		t.Errorf("stderr = %q, want %q", log, "warning: tool report\n")
	}
}

func TestElicit(t *testing.T) {
	type answer struct {
		Confirm bool `json:"confirm"`
	}
	tests := []struct {
		name       string
		host       fakeHost
		schema     string
		wantAction Action
		wantErr    error
		wantAnswer bool
	}{
		{"accept", fakeHost{reply: `{"action":"accept","content":{"confirm":true}}`}, `{"type":"object"}`, Accept, nil, true},
		{"decline", fakeHost{reply: `{"action":"decline"}`}, `{"type":"object"}`, Decline, nil, false},
		{"cancel", fakeHost{reply: `{"action":"cancel"}`}, "", Cancel, nil, false},
		{"unsupported", fakeHost{replyCode: abi.ElicitUnsupported}, "", "", ErrElicitUnsupported, false},
		{"unknown negative code", fakeHost{replyCode: -7}, "", "", ErrElicitUnsupported, false},
		{"limit reached", fakeHost{replyCode: abi.ElicitLimit}, "", "", ErrElicitLimit, false},
		{"host refuses", fakeHost{replyCode: abi.ElicitBadRequest}, "", "", ErrElicitBadRequest, false},
		{"schema not JSON", fakeHost{}, "{", "", ErrElicitBadRequest, false},
		{"reply not JSON", fakeHost{reply: `{`}, "", "", ErrElicitReply, false},
		{"unknown action", fakeHost{reply: `{"action":"maybe"}`}, "", "", ErrElicitReply, false},
		{"content of the wrong type", fakeHost{reply: `{"action":"accept","content":{"confirm":"yes"}}`}, "", "", ErrElicitReply, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Call{tool: "t", host: &tt.host}
			var a answer
			action, err := c.Elicit("Continue?", tt.schema, &a)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if action != tt.wantAction {
				t.Errorf("got action %q, want %q", action, tt.wantAction)
			}
			if a.Confirm != tt.wantAnswer {
				t.Errorf("got answer %v, want %v", a.Confirm, tt.wantAnswer)
			}
		})
	}
}

func TestElicitRequestShape(t *testing.T) {
	h := &fakeHost{reply: `{"action":"decline"}`}
	c := &Call{tool: "t", host: h}
	if _, err := c.Elicit("Go on?", "", nil); err != nil {
		t.Fatal(err)
	}
	want := `{"message":"Go on?","requestedSchema":{"type":"object","properties":{}}}`
	if len(h.elicited) != 1 || h.elicited[0] != want {
		t.Errorf("elicit request = %q, want [%s]", h.elicited, want)
	}
}

func TestStructuredRefusesNonObjects(t *testing.T) {
	for _, v := range []any{42, "s", []int{1}, nil, map[string]int(nil), make(chan int)} {
		if _, err := Structured(v); !errors.Is(err, ErrStructured) {
			t.Errorf("Structured(%T) error = %v, want ErrStructured", v, err)
		}
	}
	r, err := Structured(map[string]int{"n": 1})
	if err != nil || string(r.StructuredContent) != `{"n":1}` || r.Content[0].Text != `{"n":1}` {
		t.Errorf("Structured(map) = %+v, %v", r, err)
	}
}

// panicky panics when encoded or decoded.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("marshal") }
func (*panicky) UnmarshalJSON([]byte) error  { panic("unmarshal") }

// TestWarm: warming tolerates any type (a panicking or failing encoder
// included) and leaves no value behind; outside a pre-initialised build,
// Warm does nothing.
func TestWarm(t *testing.T) {
	warmSDK()
	warmType[panicky]()
	warmType[struct {
		C chan int
		P *panicky
	}]()
	warmType[wcArgs]()
	warmValue(panicky{})
	warmValue(nil)
	warmValue(make(chan int))
	Warm(panicky{}) // a no-op here, so it does not panic either
	if warming() {
		t.Error("warming() is true outside a pre-initialised build")
	}
}
