package guest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

var testModule = Module{
	Name: "docs",
	Resources: []Resource{{URI: "docs://readme", Name: "readme", MIMEType: "text/plain",
		Read: func(req ReadRequest) ([]abi.ResourceContents, error) {
			return TextContents(req.URI, "text/plain", "read me"), nil
		}}},
	Templates: []ResourceTemplate{{URITemplate: "docs://pages/{page}", Name: "page", CompleteVars: []string{"page"},
		Read: func(req ReadRequest) ([]abi.ResourceContents, error) {
			if req.Variables["page"] == "missing" {
				return nil, ErrNotFound
			}
			return TextContents(req.URI, "", "page "+req.Variables["page"]), nil
		},
		Complete: func(name, value string, _ map[string]string) ([]string, error) {
			return []string{value + "1", value + "2"}, nil
		}}},
	Prompts: []Prompt{{Name: "greet", Arguments: []abi.PromptArgument{{Name: "who", Required: true}},
		Get: func(_ *Call, args map[string]string) (abi.PromptResult, error) {
			if args["who"] == "" {
				return abi.PromptResult{}, errors.New("nobody to greet")
			}
			return abi.PromptResult{Messages: []abi.PromptMessage{{Role: "user", Content: abi.Content{Type: "text", Text: "Hello, " + args["who"]}}}}, nil
		}}},
}

func serveModule(t *testing.T, req string) string {
	t.Helper()
	var out, log bytes.Buffer
	if err := serve(strings.NewReader(req), &out, &log, nil, testModule); err != nil {
		t.Fatalf("serve %s: %v", req, err)
	}
	return out.String()
}

func TestModule(t *testing.T) {
	b, err := testModule.Describe()
	if err != nil {
		t.Fatal(err)
	}
	m, err := abi.DecodeManifest(b)
	if err != nil || len(m.Resources) != 1 || len(m.ResourceTemplates) != 1 || len(m.Prompts) != 1 || m.Revision != abi.Revision {
		t.Fatalf("manifest %s: %v", b, err)
	}
	for _, tc := range []struct{ req, want string }{
		{`{"abi":1,"method":"read","uri":"docs://readme"}`, `{"contents":[{"uri":"docs://readme","mimeType":"text/plain","text":"read me"}]}`},
		{`{"abi":1,"method":"read","uri":"docs://pages/7","template":"docs://pages/{page}","variables":{"page":"7"}}`, `{"contents":[{"uri":"docs://pages/7","text":"page 7"}]}`},
		{`{"abi":1,"method":"read","uri":"docs://pages/missing","template":"docs://pages/{page}","variables":{"page":"missing"}}`, `{"contents":null,"error":{"code":-32002,"message":"guest: resource not found"}}`},
		{`{"abi":1,"method":"read","uri":"docs://nothing"}`, `{"contents":null,"error":{"code":-32002,"message":"resource not found"}}`},
		{`{"abi":1,"method":"prompt","prompt":"greet","arguments":{"who":"Ada"}}`, `{"messages":[{"role":"user","content":{"type":"text","text":"Hello, Ada"}}]}`},
		{`{"abi":1,"method":"prompt","prompt":"greet","arguments":{}}`, `{"messages":null,"error":{"code":-32603,"message":"nobody to greet"}}`},
		{`{"abi":1,"method":"prompt","prompt":"other"}`, `{"messages":null,"error":{"code":-32602,"message":"unknown prompt \"other\""}}`},
		{`{"abi":1,"method":"complete","ref":{"type":"ref/resource","uri":"docs://pages/{page}"},"argument":{"name":"page","value":"a"}}`, `{"values":["a1","a2"],"total":2}`},
		{`{"abi":1,"method":"complete","ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}}`, `{"values":[]}`},
	} {
		got := serveModule(t, tc.req)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.req, got, tc.want)
		}
	}
	// Every answer is one the host accepts.
	if _, err := abi.DecodeReadResult([]byte(serveModule(t, `{"abi":1,"method":"read","uri":"docs://readme"}`)), "docs://readme", abi.ResultLimits{}); err != nil {
		t.Errorf("the host refuses the read: %v", err)
	}
	if _, err := (Module{Prompts: []Prompt{{Name: "p"}}}).Describe(); !errors.Is(err, ErrTool) {
		t.Errorf("a prompt without Get: %v, want ErrTool", err)
	}
}
