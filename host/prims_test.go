package host

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
)

// primsModule is an ABI 1.2 module serving no tools: the resource
// test://static, the template test://items/{id} and the prompt greet
// (host/internal/wasmrt/testdata/prims.wat).
func primsModule(t *testing.T) []byte {
	t.Helper()
	return hosttest.Wasm(t, "internal/wasmrt/testdata/prims.wat")
}

// A module's resources, template and prompt are served over MCP by the
// host, each request in a fresh instance; a new version of the module
// tells the client that the resource list changed and that the resource
// it follows was updated.
func TestModuleServesPrimitives(t *testing.T) {
	dir := t.TempDir()
	v1 := primsModule(t)
	put(t, dir, "prims.wasm", v1)
	s, _ := newReloadServer(t, Config{ToolsDir: dir})
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	h := hosttest.NewHTTPClient(t, srv.URL+HTTPPath)
	h.HC = srv.Client()
	h.Initialize(nil)
	defer h.Close()

	asJSON := func(m hosttest.Message, member string) string {
		t.Helper()
		if m.Error != nil {
			t.Fatalf("%s: error %d %s", member, m.Error.Code, m.Error.Message)
		}
		var r map[string]json.RawMessage
		if err := m.Decode(&r); err != nil {
			t.Fatal(err)
		}
		return string(r[member])
	}
	for _, tc := range []struct {
		method string
		params map[string]any
		member string
		want   string
	}{
		{"resources/list", nil, "resources", `[{"mimeType":"text/plain","name":"static","uri":"test://static"}]`},
		{"resources/templates/list", nil, "resourceTemplates", `[{"name":"item","uriTemplate":"test://items/{id}"}]`},
		{"prompts/list", nil, "prompts", `[{"arguments":[{"name":"who"}],"name":"greet"}]`},
		{"resources/read", map[string]any{"uri": "test://static"}, "contents", `[{"text":"static","uri":"test://static"}]`},
		{"resources/read", map[string]any{"uri": "test://items/7"}, "contents", `[{"text":"static","uri":"test://static"}]`},
		{"prompts/get", map[string]any{"name": "greet"}, "messages", `[{"content":{"text":"hi","type":"text"},"role":"user"}]`},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "greet"}, "argument": map[string]any{"name": "who", "value": ""}}, "completion", `{"total":2,"values":["one","two"]}`},
	} {
		if got := canonicalJSON(t, asJSON(h.Call(tc.method, tc.params), tc.member)); got != tc.want {
			t.Errorf("%s %v: %s = %s, want %s", tc.method, tc.params, tc.member, got, tc.want)
		}
	}
	if m := h.Call("resources/read", map[string]any{"uri": "test://nothing"}); m.Code() != -32002 {
		t.Errorf("read of what nothing serves: %s, want -32002", m.Raw)
	}
	if m := h.Call("resources/read", map[string]any{"uri": "test://items/x"}); m.Code() != -32603 {
		t.Errorf("read the module answers wrongly: %s, want -32603", m.Raw)
	}
	if m := h.Call("resources/subscribe", map[string]any{"uri": "test://static"}); m.Error != nil {
		t.Fatalf("subscribe: %s", m.Raw)
	}

	notes, stop := notifications(t, h)
	defer stop()
	v2 := replaceOnce(t, v1, `"mimeType":"text/plain"`, `"mimeType":"text/plane"`)
	put(t, dir, "prims.wasm", v2)
	await(s, built(map[string]string{"prims": digest(v2)}))
	want := map[string]bool{"notifications/resources/list_changed": true, "notifications/resources/updated": true}
	for m := range notes {
		delete(want, m.Method)
		if len(want) == 0 {
			break
		}
	}
	if len(want) != 0 {
		t.Errorf("the GET stream ended without %v", want)
	}
	if got := canonicalJSON(t, asJSON(h.Call("resources/list", nil), "resources")); got != `[{"mimeType":"text/plane","name":"static","uri":"test://static"}]` {
		t.Errorf("resources after the reload: %s", got)
	}
}

// canonicalJSON is s with its objects' members sorted.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// A resource declared cacheable is read once per tenant while its entry
// lives; a resource that is not is read every time.
func TestCacheableResourceRead(t *testing.T) {
	b := replaceOnce(t, primsModule(t), `"name":"static","mimeType":"text/plain"`, `"name":"s",  "cache":{"cacheable":true}`)
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"prims.wasm": {Data: b}}, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ready(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	c := s.catalog.Load()
	code := c.primsOf("prims").code
	read := func(tenant, uri string) {
		t.Helper()
		if _, _, err := c.ReadResource(context.Background(), mcpserver.Caller{Tenant: tenant}, uri, nil); err != nil {
			t.Fatalf("read %s as %s: %v", uri, tenant, err)
		}
	}
	base := code.Instantiations()
	read("alice", "test://static")
	read("alice", "test://static")
	if n := code.Instantiations() - base; n != 1 {
		t.Errorf("a cacheable resource read twice ran %d instances, want 1", n)
	}
	read("bob", "test://static")
	if n := code.Instantiations() - base; n != 2 {
		t.Errorf("another tenant's read: %d instances in all, want 2", n)
	}
	read("alice", "test://items/1")
	read("alice", "test://items/1")
	if n := code.Instantiations() - base; n != 4 {
		t.Errorf("a template not declared cacheable read twice: %d instances in all, want 4", n)
	}
}

// The library's own reads, prompts and completions take MCP's paths and
// fail with the host's errors: what is unknown, missing arguments, a guest
// that answers wrongly.
func TestDirectPrimitives(t *testing.T) {
	ctx := context.Background()
	open := func(wasm []byte) *Server {
		t.Helper()
		s, err := New(ctx, Config{ToolsFS: fstest.MapFS{"prims.wasm": {Data: wasm}}, CacheDir: testCacheDir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open(primsModule(t))
	if r := s.Resources(); len(r) != 1 || r[0].URI != "test://static" || r[0].Module != "prims" || r[0].Digest == "" || r[0].Policy.MemoryMiB == 0 {
		t.Errorf("Resources() = %+v, want test://static of module prims with its digest and limits", r)
	}
	if r := s.ResourceTemplates(); len(r) != 1 || r[0].URITemplate != "test://items/{id}" || r[0].Module != "prims" {
		t.Errorf("ResourceTemplates() = %+v, want test://items/{id} of module prims", r)
	}
	if p := s.Prompts(); len(p) != 1 || p[0].Name != "greet" || p[0].Module != "prims" || len(p[0].Arguments) != 1 || !p[0].Arguments[0].Complete {
		t.Errorf("Prompts() = %+v, want greet of module prims completing its argument", p)
	}

	if res, err := s.ReadResource(ctx, "test://items/7"); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "static" {
		t.Errorf("ReadResource(test://items/7) = %+v, %v; want the module's contents", res, err)
	}
	if _, err := s.ReadResource(ctx, "test://nothing"); !errors.Is(err, ErrUnknownResource) {
		t.Errorf("ReadResource of what nothing serves: %v, want ErrUnknownResource", err)
	}
	var ge *GuestError
	if _, err := s.ReadResource(ctx, "test://items/x"); !errors.As(err, &ge) || ge.Kind != KindBadOutput {
		t.Errorf("ReadResource the module answers wrongly: %v, want a GuestError of kind bad output", err)
	}
	if res, err := s.GetPrompt(ctx, "greet", map[string]string{"who": "you"}); err != nil || len(res.Messages) != 1 || res.Messages[0].Content.Text != "hi" {
		t.Errorf("GetPrompt(greet) = %+v, %v; want the module's message", res, err)
	}
	if _, err := s.GetPrompt(ctx, "nothing", nil); !errors.Is(err, ErrUnknownPrompt) {
		t.Errorf("GetPrompt of an unknown prompt: %v, want ErrUnknownPrompt", err)
	}
	greet := abi.CompleteRef{Type: abi.RefPrompt, Name: "greet"}
	if res, err := s.Complete(ctx, greet, abi.CompleteArgument{Name: "who"}, nil); err != nil || strings.Join(res.Values, ",") != "one,two" {
		t.Errorf("Complete(greet, who) = %+v, %v; want one,two", res, err)
	}
	if res, err := s.Complete(ctx, greet, abi.CompleteArgument{Name: "other"}, nil); err != nil || len(res.Values) != 0 {
		t.Errorf("Complete of an argument not declared completed = %+v, %v; want no values", res, err)
	}

	required := open(replaceOnce(t, primsModule(t), `"complete":true`, `"required":true`))
	if _, err := required.GetPrompt(ctx, "greet", nil); !errors.Is(err, ErrArguments) || !strings.Contains(err.Error(), `missing required argument "who"`) {
		t.Errorf("GetPrompt without its required argument: %v, want ErrArguments naming it", err)
	}
}
