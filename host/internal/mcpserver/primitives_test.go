package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/taskengine"
)

// fakePrims adds resources, a template and prompts to the fake tools:
//
//	docs://r000 … docs://r299  text "text of docs://rNNN" (module m)
//	docs://blob                the bytes 0 1 2 (module m)
//	docs://broken              fails as a crashed guest (module m)
//	docs://gone                the module answers -32002 itself (module m)
//	docs://secret              module secret
//	docs://t/{name}            template: "template read <name>" (module m), completes name
//	greet(name, required)      "Hello, <name>!" (module m), completes name
//	hush                       module secret
type fakePrims struct {
	*fakeTools
	resources []abi.Resource
	mods      map[string]string // module by URI, template or prompt
	runs      atomic.Int64      // requests run (reads, prompts, completions)
}

func newFakePrims(ft *fakeTools) *fakePrims {
	f := &fakePrims{fakeTools: ft, mods: map[string]string{}}
	for i := range 300 {
		f.add(fmt.Sprintf("docs://r%03d", i), "m")
	}
	for _, uri := range []string{"docs://blob", "docs://broken", "docs://gone"} {
		f.add(uri, "m")
	}
	f.add("docs://secret", "secret")
	f.mods["docs://t/{name}"], f.mods["greet"], f.mods["hush"] = "m", "m", "secret"
	return f
}

func (f *fakePrims) add(uri, module string) {
	f.resources = append(f.resources, abi.Resource{URI: uri, Name: strings.TrimPrefix(uri, "docs://")})
	f.mods[uri] = module
}

func (f *fakePrims) ok(visible func(name, module string) bool, name string) bool {
	module, served := f.mods[name]
	return served && (visible == nil || visible(name, module))
}

func (f *fakePrims) Resources(visible func(name, module string) bool) []abi.Resource {
	var out []abi.Resource
	for _, r := range f.resources {
		if f.ok(visible, r.URI) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakePrims) ResourceTemplates(visible func(name, module string) bool) []abi.ResourceTemplate {
	if !f.ok(visible, "docs://t/{name}") {
		return nil
	}
	return []abi.ResourceTemplate{{URITemplate: "docs://t/{name}", Name: "t", Complete: []string{"name"}}}
}

func (f *fakePrims) Prompts(visible func(name, module string) bool) []abi.Prompt {
	var out []abi.Prompt
	for _, p := range []abi.Prompt{{Name: "greet", Arguments: []abi.PromptArgument{{Name: "name", Required: true, Complete: true}}}, {Name: "hush"}} {
		if f.ok(visible, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

// key is what serves uri: itself, or the template.
func (f *fakePrims) key(uri string) string {
	if strings.HasPrefix(uri, "docs://t/") {
		return "docs://t/{name}"
	}
	return uri
}

func (f *fakePrims) Routes(uri string, visible func(name, module string) bool) bool {
	module, served := f.mods[f.key(uri)]
	return served && (visible == nil || visible(uri, module))
}

func (f *fakePrims) ReadResource(ctx context.Context, _ Caller, uri string, visible func(name, module string) bool) (*abi.ReadResult, string, error) {
	if !f.Routes(uri, visible) {
		return nil, "", fmt.Errorf("%w: %q", ErrUnknownResource, uri)
	}
	f.runs.Add(1)
	module := f.mods[f.key(uri)]
	switch {
	case uri == "docs://blob":
		return &abi.ReadResult{Contents: []abi.ResourceContents{{URI: uri, MIMEType: "application/octet-stream", Blob: "AAEC"}}}, module, nil
	case uri == "docs://broken":
		return nil, module, &mcperr.Failure{Kind: mcperr.FailCrashed, Detail: "exit code 3", Err: errors.New("fake: crashed")}
	case uri == "docs://gone":
		return &abi.ReadResult{Error: &abi.ProtocolError{Code: abi.CodeResourceNotFound, Message: "no longer here"}}, module, nil
	case strings.HasPrefix(uri, "docs://t/"):
		return &abi.ReadResult{Contents: []abi.ResourceContents{{URI: uri, Text: "template read " + strings.TrimPrefix(uri, "docs://t/")}}}, module, nil
	}
	return &abi.ReadResult{Contents: []abi.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "text of " + uri}}}, module, nil
}

func (f *fakePrims) GetPrompt(ctx context.Context, _ Caller, name string, args map[string]string, ev abi.Events, visible func(name, module string) bool) (*abi.PromptResult, string, error) {
	if !f.ok(visible, name) {
		return nil, "", fmt.Errorf("%w: %q", ErrUnknownPrompt, name)
	}
	if _, given := args["name"]; name == "greet" && !given {
		return nil, "m", &mcperr.Failure{Kind: mcperr.FailArguments, Detail: `missing required argument "name"`}
	}
	f.runs.Add(1)
	if args["name"] == "?" && ev != nil { // greet asks whom, under the key "who"
		r, err := ev.Elicit(ctx, abi.ElicitRequest{Key: "who", Message: "Whom?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
		if err != nil {
			return nil, "m", err
		}
		var in struct{ Name string }
		_ = json.Unmarshal(r.Content, &in)
		args = map[string]string{"name": in.Name}
	}
	return &abi.PromptResult{Description: "a greeting", Messages: []abi.PromptMessage{
		{Role: "user", Content: abi.Content{Type: "text", Text: "Hello, " + args["name"] + "!"}},
		{Role: "assistant", Content: abi.Content{Type: "resource", Resource: &abi.ResourceContents{URI: "docs://r001", Text: "embedded"}}},
	}}, f.mods[name], nil
}

func (f *fakePrims) Complete(ctx context.Context, _ Caller, ref abi.CompleteRef, arg abi.CompleteArgument, _ map[string]string, visible func(name, module string) bool) (*abi.CompleteResult, error) {
	name := ref.Name
	if ref.Type == abi.RefResource {
		name = ref.URI
	}
	if !f.ok(visible, name) || arg.Name != "name" {
		return &abi.CompleteResult{Values: []string{}}, nil
	}
	f.runs.Add(1)
	var out []string
	for _, v := range []string{"ada", "alan", "grace"} {
		if strings.HasPrefix(v, arg.Value) {
			out = append(out, v)
		}
	}
	return &abi.CompleteResult{Values: out, Total: len(out)}, nil
}

// primsServer is a test server whose catalog also serves fakePrims.
func primsServer(t *testing.T, edit func(*Config)) (*testServer, *fakePrims) {
	t.Helper()
	if edit == nil {
		edit = func(*Config) {}
	}
	ts := newTestServerWith(t, taskengine.Config{}, edit)
	fp := newFakePrims(ts.tools)
	ts.catalog.Store(fp)
	return ts, fp
}

// caller is what primitive tests need of a client of either transport.
type caller interface {
	call(id int, method string, params any) map[string]any
}

// checkPrimitives runs the requests every era answers alike. noName is
// the code of a read or prompt request without its URI or name (over
// 2026-07-28 HTTP the edge refuses it for its missing Mcp-Name header).
func checkPrimitives(t *testing.T, c caller, noName, notFound int) {
	t.Helper()
	// Pages: 256, then the rest; a cursor from nowhere is refused.
	r := result(c.call(1, "resources/list", nil))
	first, _ := r["resources"].([]any)
	next, _ := r["nextCursor"].(string)
	if len(first) != listPage || next == "" {
		t.Fatalf("first page: %d resources, nextCursor %q; want %d and a cursor", len(first), next, listPage)
	}
	r = result(c.call(2, "resources/list", map[string]any{"cursor": next}))
	rest, _ := r["resources"].([]any)
	if len(rest) != 304-listPage || r["nextCursor"] != nil {
		t.Errorf("second page: %d resources, nextCursor %v; want %d and none", len(rest), r["nextCursor"], 304-listPage)
	}
	if got := errCode(c.call(3, "resources/list", map[string]any{"cursor": "bm9wZQ"})); got != -32602 {
		t.Errorf("an invented cursor: code %d, want -32602", got)
	}
	tpl, _ := result(c.call(4, "resources/templates/list", nil))["resourceTemplates"].([]any)
	if b, _ := json.Marshal(tpl); string(b) != `[{"name":"t","uriTemplate":"docs://t/{name}"}]` {
		t.Errorf("templates: %s", b)
	}

	// Reads: text, blob, through the template, and each way of failing.
	for _, tc := range []struct{ uri, want string }{
		{"docs://r001", `[{"mimeType":"text/plain","text":"text of docs://r001","uri":"docs://r001"}]`},
		{"docs://blob", `[{"blob":"AAEC","mimeType":"application/octet-stream","uri":"docs://blob"}]`},
		{"docs://t/ada", `[{"text":"template read ada","uri":"docs://t/ada"}]`},
	} {
		m := c.call(5, "resources/read", map[string]any{"uri": tc.uri})
		if b, _ := json.Marshal(result(m)["contents"]); string(b) != tc.want {
			t.Errorf("read %s: %s (%v), want contents %s", tc.uri, b, m["error"], tc.want)
		}
	}
	for _, tc := range []struct {
		uri  string
		code int
		text string
	}{
		{"docs://nowhere", notFound, `resource not found: "docs://nowhere"`},
		{"docs://gone", notFound, "no longer here"},
		{"docs://broken", -32603, `resource "docs://broken" failed: exit code 3`},
	} {
		m := c.call(6, "resources/read", map[string]any{"uri": tc.uri})
		e, _ := m["error"].(map[string]any)
		if errCode(m) != tc.code || !strings.Contains(fmt.Sprint(e["message"]), tc.text) {
			t.Errorf("read %s: %v, want code %d with %q", tc.uri, m["error"], tc.code, tc.text)
		}
		if data, _ := e["data"].(map[string]any); tc.code == notFound && data["uri"] != tc.uri {
			t.Errorf("read %s: error data %v, want the URI", tc.uri, e["data"])
		}
	}
	if got := errCode(c.call(7, "resources/read", map[string]any{})); got != noName {
		t.Errorf("read without a URI: code %d, want %d", got, noName)
	}

	// Prompts.
	if ps, _ := result(c.call(8, "prompts/list", nil))["prompts"].([]any); len(ps) != 2 {
		t.Errorf("prompts/list: %v, want greet and hush", ps)
	}
	m := c.call(9, "prompts/get", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}})
	const wantMessages = `[{"content":{"text":"Hello, Ada!","type":"text"},"role":"user"},` +
		`{"content":{"resource":{"text":"embedded","uri":"docs://r001"},"type":"resource"},"role":"assistant"}]`
	if b, _ := json.Marshal(result(m)["messages"]); string(b) != wantMessages {
		t.Errorf("prompts/get greet: %s (%v), want %s", b, m["error"], wantMessages)
	}
	for _, params := range []map[string]any{{"name": "greet"}, {"name": "nobody"}} {
		if got := errCode(c.call(10, "prompts/get", params)); got != -32602 {
			t.Errorf("prompts/get %v: code %d, want -32602", params, got)
		}
	}
	if got := errCode(c.call(10, "prompts/get", map[string]any{})); got != noName {
		t.Errorf("prompts/get without a name: code %d, want %d", got, noName)
	}

	// Completion, of a prompt argument and of a template variable.
	for _, ref := range []map[string]any{{"type": "ref/prompt", "name": "greet"}, {"type": "ref/resource", "uri": "docs://t/{name}"}} {
		m := c.call(11, "completion/complete", map[string]any{"ref": ref, "argument": map[string]any{"name": "name", "value": "a"}})
		if b, _ := json.Marshal(result(m)["completion"]); string(b) != `{"total":2,"values":["ada","alan"]}` {
			t.Errorf("complete %v: %s (%v)", ref, b, m["error"])
		}
	}
	m = c.call(12, "completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "hush"}, "argument": map[string]any{"name": "x", "value": ""}})
	if b, _ := json.Marshal(result(m)["completion"]); string(b) != `{"values":[]}` {
		t.Errorf("complete what nothing completes: %s (%v), want no values", b, m["error"])
	}
	if got := errCode(c.call(13, "completion/complete", map[string]any{"ref": map[string]any{"type": "ref/tool"}, "argument": map[string]any{"name": "x"}})); got != -32602 {
		t.Errorf("completion of an unknown ref type: code %d, want -32602", got)
	}
}

// A module's resources, templates, prompts and completions are served on
// a 2025-11-25 session, and the capabilities say so.
func TestPrimitivesServed(t *testing.T) {
	ts, _ := primsServer(t, nil)
	c := ts.connectStdio(t)
	r := c.call(0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	caps, _ := result(r)["capabilities"].(map[string]any)
	if b, _ := json.Marshal(map[string]any{"resources": caps["resources"], "prompts": caps["prompts"], "completions": caps["completions"]}); string(b) != `{"completions":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}` {
		t.Errorf("capabilities: %s", b)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	checkPrimitives(t, c, -32602, abi.CodeResourceNotFound)
}

// The same requests in a 2026-07-28 request, which carries resultType
// and answers a resource that is not found with -32602 (SEP-2164).
func TestModernPrimitives(t *testing.T) {
	ts, _ := primsServer(t, nil)
	c := modernCaller{ts.modernClient(t)}
	checkPrimitives(t, c, -32020, -32602)
	for _, rq := range []struct {
		method string
		params map[string]any
	}{
		{"resources/list", nil}, {"resources/templates/list", nil}, {"prompts/list", nil},
		{"resources/read", map[string]any{"uri": "docs://r001"}},
		{"prompts/get", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "greet"}, "argument": map[string]any{"name": "name", "value": ""}}},
	} {
		if m := c.c.Call(rq.method, rq.params).Map(); m["resultType"] != resultComplete {
			t.Errorf("2026-07-28 %s: resultType %v, want %q", rq.method, m["resultType"], resultComplete)
		}
	}
}

// What a tenant may not see is absent from its lists, unknown to its
// requests, and never run.
func TestPrimitivesVisiblePerUser(t *testing.T) {
	ts, fp := primsServer(t, func(c *Config) {
		c.Visible = func(user string, _ Kind, _, module string) bool { return user == "alice" || module != "secret" }
	})
	client := authClients(t, ts)
	alice, bob := client("alice"), client("bob")
	count := func(c *httpClient, method, member string) int {
		n := 0
		params := map[string]any{}
		for {
			r := result(c.call(1, method, params))
			items, _ := r[member].([]any)
			n += len(items)
			next, _ := r["nextCursor"].(string)
			if next == "" {
				return n
			}
			params = map[string]any{"cursor": next}
		}
	}
	if a, b := count(alice, "resources/list", "resources"), count(bob, "resources/list", "resources"); a != 304 || b != 303 {
		t.Errorf("resources listed: alice %d, bob %d; want 304 and 303", a, b)
	}
	if a, b := count(alice, "prompts/list", "prompts"), count(bob, "prompts/list", "prompts"); a != 2 || b != 1 {
		t.Errorf("prompts listed: alice %d, bob %d; want 2 and 1", a, b)
	}
	if r := result(bob.call(1, "resources/list", nil)); r["cacheScope"] != "private" {
		t.Errorf("a list that depends on the tenant has cacheScope %v, want private", r["cacheScope"])
	}
	before := fp.runs.Load()
	if got := errCode(bob.call(2, "resources/read", map[string]any{"uri": "docs://secret"})); got != abi.CodeResourceNotFound {
		t.Errorf("bob reads a hidden resource: code %d, want %d", got, abi.CodeResourceNotFound)
	}
	if got := errCode(bob.call(3, "prompts/get", map[string]any{"name": "hush"})); got != -32602 {
		t.Errorf("bob gets a hidden prompt: code %d, want -32602", got)
	}
	if got := errCode(bob.call(4, "resources/subscribe", map[string]any{"uri": "docs://secret"})); got != abi.CodeResourceNotFound {
		t.Errorf("bob subscribes to a hidden resource: code %d, want %d", got, abi.CodeResourceNotFound)
	}
	if n := fp.runs.Load() - before; n != 0 {
		t.Errorf("%d hidden requests ran, want none", n)
	}
	if m := alice.call(5, "resources/read", map[string]any{"uri": "docs://secret"}); m["error"] != nil || fp.runs.Load()-before != 1 {
		t.Errorf("alice reads docs://secret: %v", m)
	}
}

// Subscriptions: to what is served, bounded per session; a change of a
// followed resource's module sends resources/updated; list changes send
// their list_changed.
func TestResourceSubscriptions(t *testing.T) {
	ts, _ := primsServer(t, nil)
	c := ts.connectStdio(t)
	c.initialize(false)
	if got := errCode(c.call(1, "resources/subscribe", map[string]any{"uri": "docs://nowhere"})); got != abi.CodeResourceNotFound {
		t.Errorf("subscribe to nothing: code %d, want %d", got, abi.CodeResourceNotFound)
	}
	for i := range maxSubscriptions {
		uri := fmt.Sprintf("docs://r%03d", i)
		if i == maxSubscriptions-1 {
			uri = "docs://t/ada" // through the template
		}
		if m := c.call(2, "resources/subscribe", map[string]any{"uri": uri}); m["error"] != nil {
			t.Fatalf("subscribe %s: %v", uri, m["error"])
		}
	}
	if got := errCode(c.call(3, "resources/subscribe", map[string]any{"uri": "docs://r299"})); got != -32602 {
		t.Errorf("subscription %d: code %d, want -32602", maxSubscriptions+1, got)
	}
	if m := c.call(4, "resources/subscribe", map[string]any{"uri": "docs://r000"}); m["error"] != nil {
		t.Errorf("subscribing again to a followed URI: %v", m["error"])
	}
	if m := c.call(5, "resources/unsubscribe", map[string]any{"uri": "docs://r001"}); m["error"] != nil {
		t.Errorf("unsubscribe: %v", m["error"])
	}
	if got := len(ts.subs.uris()); got != maxSubscriptions-1 {
		t.Errorf("%d URIs followed after one unsubscribe, want %d", got, maxSubscriptions-1)
	}

	ts.ResourcesUpdated(context.Background(), func(uri string) bool { return uri == "docs://t/ada" || uri == "docs://r001" })
	ts.ResourcesChanged()
	ts.PromptsChanged()
	want := map[string]bool{"notifications/resources/updated docs://t/ada": true, "notifications/resources/list_changed": true, "notifications/prompts/list_changed": true}
	for len(want) > 0 {
		m := c.next()
		key := fmt.Sprint(m["method"])
		if p, _ := m["params"].(map[string]any); p["uri"] != nil {
			key += " " + fmt.Sprint(p["uri"])
		}
		if key == "notifications/resources/updated docs://r001" {
			t.Errorf("resources/updated for an unsubscribed URI")
		}
		delete(want, key)
	}
	c.closeInput()
	<-c.done
	if got := len(ts.subs.uris()); got != 0 {
		t.Errorf("%d URIs still followed after the session ended, want none", got)
	}
}

// A catalog that serves tools only answers the lists empty and reads with
// resource not found.
func TestToolsOnlyCatalogServesNoPrimitives(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(false)
	if r := result(c.call(1, "resources/list", nil)); r == nil || len(r["resources"].([]any)) != 0 {
		t.Errorf("resources/list of a tools-only catalog: %v", r)
	}
	if got := errCode(c.call(2, "resources/read", map[string]any{"uri": "docs://a"})); got != abi.CodeResourceNotFound {
		t.Errorf("read: code %d, want %d", got, abi.CodeResourceNotFound)
	}
}

// modernClient is a 2026-07-28 client of ts over HTTP.
func (ts *testServer) modernClient(t *testing.T) *hosttest.ModernClient {
	srv := ts.httpServer(t)
	c := hosttest.NewModernClient(t, srv.URL+mcphttp.Path)
	c.HC = srv.Client()
	return c
}

// modernCaller makes a 2026-07-28 client a caller: each response as a map.
type modernCaller struct{ c *hosttest.ModernClient }

func (m modernCaller) call(_ int, method string, params any) map[string]any {
	p, _ := params.(map[string]any)
	var out map[string]any
	if err := json.Unmarshal(m.c.Call(method, p).Raw, &out); err != nil {
		panic(err)
	}
	return out
}

// TestModernPromptRounds: a 2026-07-28 prompts/get whose prompt asks
// answers input_required, and completes with the answer and its state;
// an altered state is refused.
func TestModernPromptRounds(t *testing.T) {
	ts, _ := primsServer(t, nil)
	c := ts.modernClient(t)
	c.Capabilities = map[string]any{"elicitation": map[string]any{}}
	params := map[string]any{"name": "greet", "arguments": map[string]any{"name": "?"}}
	r1 := c.Call("prompts/get", params).Map()
	reqs, _ := r1["inputRequests"].(map[string]any)
	state, _ := r1["requestState"].(string)
	if r1["resultType"] != resultInputRequired || reqs["who"] == nil || state == "" {
		t.Fatalf("round 1 = %v, want input_required asking who, with a state", r1)
	}
	params["inputResponses"] = map[string]any{"who": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	params["requestState"] = state
	if r2 := c.Call("prompts/get", params).Map(); r2["resultType"] != resultComplete || !strings.Contains(fmt.Sprint(r2["messages"]), "Hello, Ada!") {
		t.Errorf("round 2 = %v, want the prompt for Ada", r2)
	}
	params["requestState"] = state + "x"
	if m := c.Call("prompts/get", params); m.Code() != -32602 {
		t.Errorf("an altered state: %s, want -32602", m.Raw)
	}
	// The state is bound to the arguments it was issued for.
	params["requestState"] = state
	params["arguments"] = map[string]any{"name": "Bob"}
	if m := c.Call("prompts/get", params); m.Code() != -32602 {
		t.Errorf("a state for other arguments: %s, want -32602", m.Raw)
	}
}
