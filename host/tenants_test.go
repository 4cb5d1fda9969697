package host

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/taskengine"
)

func TestParseTenants(t *testing.T) {
	digest := HashToken("secret")
	for _, tc := range []struct {
		name, doc string
		yaml      bool
		wantErr   string // "" = valid
	}{
		{"json", `{"tenants":{"acme":{"tokens":["` + digest + `"],"tools":["add","word_*"]}}}`, false, ""},
		{"yaml", "tenants:\n  acme:\n    tokens: [\"" + digest + "\"]\n    modules: [demo]\njwt:\n  issuer: https://i\n  audience: a\n  jwksURL: https://i/jwks\n", true, ""},
		{"unknown field", `{"tenants":{"acme":{"token":"x"}}}`, false, `unknown field "token"`},
		{"unknown yaml field", "tenants:\n  acme:\n    tokenz: []\n", true, `line 3, column 5: unknown field "tokenz"`},
		{"yaml syntax", "tenants:\n  acme: [\n", true, "tenant file: line 2: did not find"},
		{"yaml field in another case", "tenants:\n  acme:\n    Tokens: []\n", true, `line 3, column 5: unknown field "Tokens" in "tenants.acme" (did you mean "tokens"?)`},
		{"duplicate yaml key", "tenants:\n  acme: {}\n  acme: {}\n", true, "already defined"},
		{"a token, not its digest", `{"tenants":{"acme":{"tokens":["secret"]}}}`, false, "never the token"},
		{"one token, two tenants", `{"tenants":{"a":{"tokens":["` + digest + `"]},"b":{"tokens":["` + digest + `"]}}}`, false, "a token names one tenant"},
		{"bad tenant name", `{"tenants":{"a b":{}}}`, false, "tenant name"},
		{"no tenants", `{"tenants":{}}`, false, "no tenants"},
		{"bad pattern", `{"tenants":{"a":{"tools":["[x"]}}}`, false, "pattern"},
		{"jwt without audience", `{"tenants":{"a":{}},"jwt":{"issuer":"i","jwksURL":"https://k"}}`, false, "issuer and audience"},
		{"jwt with two key sources", `{"tenants":{"a":{}},"jwt":{"issuer":"i","audience":"a","jwksURL":"https://k","jwksFile":"k.json"}}`, false, "exactly one"},
		{"jwks over http", `{"tenants":{"a":{}},"jwt":{"issuer":"i","audience":"a","jwksURL":"http://keys.example.com/jwks"}}`, false, "must be an https URL"},
		{"quota too large", `{"tenants":{"a":{"maxMemoryMiB":2000000}}}`, false, "not a quota"},
		{"jwt with hmac", `{"tenants":{"a":{}},"jwt":{"issuer":"i","audience":"a","jwksURL":"https://k","algorithms":["HS256"]}}`, false, "refused"},
		{"trailing", `{"tenants":{"a":{}}} {}`, false, "trailing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTenants([]byte(tc.doc), tc.yaml)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParseTenants: %v, want valid", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ParseTenants error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// jwtIssuer signs test JWTs with an ECDSA key published in a JWKS file.
type jwtIssuer struct {
	key  *ecdsa.PrivateKey
	kid  string
	jwks []byte
}

func newJWTIssuer(t *testing.T, kid string) *jwtIssuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	pub, err := key.PublicKey.Bytes() // uncompressed point: 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
		"x": b64(pub[1:33]), "y": b64(pub[33:]),
	}}})
	return &jwtIssuer{key: key, kid: kid, jwks: jwks}
}

func (i *jwtIssuer) sign(t *testing.T, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = i.kid
	s, err := tok.SignedString(i.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// post sends one JSON-RPC request with token (none when "") and returns
// the status, the WWW-Authenticate header and the body.
func post(t *testing.T, url, token string, msg string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

const initializeMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestTenantsOverHTTP: with a tenant file, every HTTP request needs a
// token of a tenant — static or a JWT signed by the JWKS — refused ones
// get 401 with a challenge naming the metadata document and are audited;
// each tenant sees its tools; a tenant's sessions share its tasks and no
// other tenant reaches them; a reload that drops a token refuses the open
// session's next request, and an invalid file changes nothing.
func TestTenantsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	iss := newJWTIssuer(t, "k1")
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), iss.jwks, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tenants.yaml")
	writeTenants := func(doc string) {
		if err := os.WriteFile(file+".tmp", []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	jwtPart := "jwt:\n  issuer: https://issuer.test\n  audience: wasmtask\n  jwksFile: jwks.json\n"
	writeTenants(fmt.Sprintf("tenants:\n  alice:\n    tokens: [%q]\n    tools: [add]\n  bob:\n    tokens: [%q]\n  carol:\n    modules: [m]\n%s",
		HashToken("alice-token"), HashToken("bob-token"), jwtPart))

	logs := newLogSink()
	s, err := New(context.Background(), Config{
		ToolsFS:     fstest.MapFS{"add.wasm": {Data: addModule(t)}, "m.wasm": {Data: verModule(t, "ver", "v1")}},
		CacheDir:    testCacheDir,
		TenantsFile: file,
		Logger:      slog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	endpoint := srv.URL + HTTPPath

	// Refused: no token, an unknown token, JWTs that must not pass.
	code, challenge, _ := post(t, endpoint, "", initializeMsg)
	wantMeta := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	if code != http.StatusUnauthorized || !strings.Contains(challenge, `resource_metadata="`+wantMeta+`"`) {
		t.Errorf("no token: %d, WWW-Authenticate %q; want 401 naming %s", code, challenge, wantMeta)
	}
	now := time.Now()
	claims := func(tenant string, exp time.Time, aud string) jwt.MapClaims {
		return jwt.MapClaims{"iss": "https://issuer.test", "aud": aud, "exp": exp.Unix(), "iat": now.Unix(), "tenant": tenant}
	}
	other := newJWTIssuer(t, "k1") // same key ID, another key
	for name, token := range map[string]string{
		"unknown token":      "nope",
		"expired JWT":        iss.sign(t, claims("carol", now.Add(-time.Hour), "wasmtask")),
		"JWT for another":    iss.sign(t, claims("carol", now.Add(time.Hour), "someone-else")),
		"JWT of a stranger":  iss.sign(t, claims("dave", now.Add(time.Hour), "wasmtask")),
		"JWT by another key": other.sign(t, claims("carol", now.Add(time.Hour), "wasmtask")),
		"JWT without exp":    iss.sign(t, jwt.MapClaims{"iss": "https://issuer.test", "aud": "wasmtask", "tenant": "carol"}),
	} {
		if code, _, body := post(t, endpoint, token, initializeMsg); code != http.StatusUnauthorized || strings.TrimSpace(body) != "invalid token" {
			t.Errorf("%s: %d %q, want 401 invalid token", name, code, body)
		}
	}
	if n, _ := metric(t, s, "wasmtask_requests_denied_total", map[string]string{"status": "401"}); n != 7 {
		t.Errorf("requests denied with 401: metric %v, want 7", n)
	}
	logs.await("audit", "request.denied", "no bearer token")
	logs.await("audit", "request.denied", "not a token of any tenant")
	logs.await("audit", "request.denied", `tenant "dave"`)

	// The metadata document names the resource.
	resp, err := http.Get(wantMeta)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource string   `json:"resource"`
		Bearer   []string `json:"bearer_methods_supported"`
		Servers  []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta.Resource != endpoint || !slices.Equal(meta.Bearer, []string{"header"}) || !slices.Equal(meta.Servers, []string{"https://issuer.test"}) {
		t.Errorf("metadata document = %+v, want resource %s", meta, endpoint)
	}

	client := func(token string) *hosttest.HTTPClient {
		h := hosttest.NewHTTPClient(t, endpoint)
		h.HC = srv.Client()
		h.Header.Set("Authorization", "Bearer "+token)
		h.Initialize(nil)
		return h
	}
	alice, bob := client("alice-token"), client("bob-token")
	carol := client(iss.sign(t, claims("carol", now.Add(time.Hour), "wasmtask")))
	for _, c := range []struct {
		name string
		h    *hosttest.HTTPClient
		want []string
	}{{"alice", alice, []string{"add"}}, {"bob", bob, []string{"add", "ver"}}, {"carol", carol, []string{"ver"}}} {
		if got := listTools(t, c.h); !slices.Equal(got, c.want) {
			t.Errorf("%s's tools/list = %v, want %v", c.name, got, c.want)
		}
	}
	if r := alice.Call("tools/call", map[string]any{"name": "ver", "arguments": map[string]any{}}); r.Code() != -32602 {
		t.Errorf("alice calling a tool she does not see = %s, want -32602 unknown tool", r.Raw)
	}
	if n, _ := metric(t, s, "wasmtask_tenant_calls_total", map[string]string{"tenant": "alice", "outcome": "ok"}); n != 0 {
		t.Errorf("alice's calls counted %v before she made one", n)
	}
	if r := alice.Call("tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 1}}); r.Error != nil {
		t.Fatalf("alice's add: %s", r.Raw)
	}
	if n, _ := metric(t, s, "wasmtask_tenant_calls_total", map[string]string{"tenant": "alice", "outcome": "ok"}); n != 1 {
		t.Errorf("alice's calls: metric %v, want 1", n)
	}

	// Tasks belong to the tenant: another session of bob reaches it,
	// alice does not.
	var created hosttest.ToolResult
	if err := bob.Call("tools/call", map[string]any{"name": "ver", "arguments": map[string]any{}, "task": map[string]any{}}).Decode(&created); err != nil || created.Task == nil {
		t.Fatalf("bob's task call: %+v, %v", created, err)
	}
	id := created.Task.TaskID
	bob2 := client("bob-token")
	if r := bob2.Call("tasks/result", map[string]any{"taskId": id}); r.Error != nil {
		t.Errorf("bob's other session: tasks/result = %s, want the result", r.Raw)
	}
	if r := alice.Call("tasks/get", map[string]any{"taskId": id}); r.Error == nil {
		t.Errorf("alice: tasks/get of bob's task = %s, want an error", r.Raw)
	}

	// Reload without alice: her open session's next request is refused.
	writeTenants(fmt.Sprintf("tenants:\n  bob:\n    tokens: [%q]\n  carol: {}\n%s", HashToken("bob-token"), jwtPart))
	if err := s.ReloadTenants(); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
	if resp, err := alice.Post(body); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("alice after her token was removed: %v, %v; want 401", resp.Status, err)
	} else {
		resp.Body.Close()
	}
	if got := listTools(t, carol); !slices.Equal(got, []string{"add", "ver"}) {
		t.Errorf("carol's tools/list after the reload = %v, want every tool", got)
	}
	// An invalid file changes nothing.
	writeTenants("tenants: {bob: {tokens: [plain-token]}}\n")
	if err := s.ReloadTenants(); err == nil {
		t.Error("ReloadTenants accepted an invalid file")
	}
	if got := listTools(t, bob); !slices.Equal(got, []string{"add", "ver"}) {
		t.Errorf("bob after an invalid reload: tools/list = %v", got)
	}
}

// tenantHTTP serves cfg (the add tool unless ToolsFS says otherwise) with
// the tenant file doc over httptest, until the test ends.
func tenantHTTP(t *testing.T, doc string, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tenants.json")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.TenantsFile = file
	cfg.CacheDir = testCacheDir
	if cfg.ToolsFS == nil {
		cfg.ToolsFS = fstest.MapFS{"add.wasm": {Data: addModule(t)}}
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

// TestTenantsFileWatched: writing the tenant file reloads it without a
// call: the log says so, and the new token works.
func TestTenantsFileWatched(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tenants.json")
	write := func(tokens ...string) {
		var ds []string
		for _, tok := range tokens {
			ds = append(ds, HashToken(tok))
		}
		b, _ := json.Marshal(map[string]any{"tenants": map[string]any{"t": map[string]any{"tokens": ds}}})
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	logs := newLogSink()
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: addModule(t)}}, CacheDir: testCacheDir,
		TenantsFile: file, ReloadDebounce: testDebounce, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	if code, _, _ := post(t, srv.URL+HTTPPath, "two", initializeMsg); code != http.StatusUnauthorized {
		t.Fatalf("token two before it is in the file: %d, want 401", code)
	}
	write("one", "two")
	logs.await("tenants reloaded")
	if code, _, body := post(t, srv.URL+HTTPPath, "two", initializeMsg); code != http.StatusOK {
		t.Errorf("token two after the file was rewritten: %d %s, want 200", code, body)
	}
}

// TestTenantRequestRate: the tenant file's request rate answers 429 with
// Retry-After past the burst, per tenant.
func TestTenantRequestRate(t *testing.T) {
	doc := fmt.Sprintf(`{"tenants":{"slow":{"tokens":[%q],"requestsPerSecond":0.01,"burst":1},"free":{"tokens":[%q]}}}`, HashToken("slow"), HashToken("free"))
	_, srv := tenantHTTP(t, doc, Config{})
	url := srv.URL + HTTPPath
	if code, _, body := post(t, url, "slow", initializeMsg); code != http.StatusOK {
		t.Fatalf("first request: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeMsg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer slow")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the burst: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for range 3 {
		if code, _, body := post(t, url, "free", initializeMsg); code != http.StatusOK {
			t.Fatalf("a tenant without a rate: %d %s", code, body)
		}
	}
}

// TestTenantTaskQuotas: a tenant's maxTasks refuses its next task call at
// once while its tasks run; another tenant's retainedTasks drops its own
// oldest results, never a third tenant's.
func TestTenantTaskQuotas(t *testing.T) {
	doc := fmt.Sprintf(`{"tenants":{"capped":{"tokens":[%q],"maxTasks":1},"busy":{"tokens":[%q],"retainedTasks":2},"other":{"tokens":[%q]}}}`,
		HashToken("capped"), HashToken("busy"), HashToken("other"))
	// A store of 4 tasks: a flood that evicted by age across tenants
	// would take other's result.
	_, srv := tenantHTTP(t, doc, Config{ToolsFS: fstest.MapFS{"m.wasm": {Data: verModule(t, "ver", "v1")}},
		Tasks: taskengine.Config{MaxTasks: 4, MaxTasksPerOwner: 4}})
	client := func(token string) *hosttest.HTTPClient {
		h := hosttest.NewHTTPClient(t, srv.URL+HTTPPath)
		h.HC = srv.Client()
		h.Header.Set("Authorization", "Bearer "+token)
		h.Initialize(nil)
		return h
	}
	capped, busy, other := client("capped"), client("busy"), client("other")
	start := func(h *hosttest.HTTPClient, args map[string]any) hosttest.Message {
		return h.Call("tools/call", map[string]any{"name": "ver", "arguments": args, "task": map[string]any{}})
	}
	taskID := func(m hosttest.Message) string {
		t.Helper()
		var r hosttest.ToolResult
		if err := m.Decode(&r); err != nil || r.Task == nil {
			t.Fatalf("task call: %s (%v), want a task", m.Raw, err)
		}
		return r.Task.TaskID
	}
	kept := taskID(start(other, map[string]any{}))
	if r := other.Call("tasks/result", map[string]any{"taskId": kept}); r.Error != nil {
		t.Fatalf("other's result: %s", r.Raw)
	}

	taskID(start(capped, map[string]any{"ms": 60000})) // runs until the server closes
	if r := start(capped, map[string]any{}); r.Error == nil || !strings.Contains(r.Error.Message, "too many tasks") {
		t.Errorf("capped's second task while its first runs: %s, want refused: too many tasks", r.Raw)
	}
	var done []string
	for range 5 { // far more than busy may keep
		id := taskID(start(busy, map[string]any{}))
		if r := busy.Call("tasks/result", map[string]any{"taskId": id}); r.Error != nil {
			t.Fatalf("busy's result: %s", r.Raw)
		}
		done = append(done, id)
	}
	if r := busy.Call("tasks/get", map[string]any{"taskId": done[0]}); r.Error == nil {
		t.Errorf("busy's oldest result is still kept past its retainedTasks of 2: %s", r.Raw)
	}
	if r := busy.Call("tasks/get", map[string]any{"taskId": done[4]}); r.Error != nil {
		t.Errorf("busy's newest result: %s, want kept", r.Raw)
	}
	if r := other.Call("tasks/get", map[string]any{"taskId": kept}); r.Error != nil {
		t.Errorf("other's result after busy's flood: %s, want kept", r.Raw)
	}
}

// TestTenantsJWKSURL: keys fetched from a JWKS URL verify a JWT.
func TestTenantsJWKSURL(t *testing.T) {
	iss := newJWTIssuer(t, "url-key")
	keys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(iss.jwks)
	}))
	defer keys.Close()
	doc := fmt.Sprintf(`{"tenants":{"carol":{}},"jwt":{"issuer":"https://issuer.test","audience":"wasmtask","jwksURL":%q}}`, keys.URL)
	_, srv := tenantHTTP(t, doc, Config{})
	token := iss.sign(t, jwt.MapClaims{"iss": "https://issuer.test", "aud": "wasmtask", "exp": time.Now().Add(time.Hour).Unix(), "tenant": "carol"})
	if code, _, body := post(t, srv.URL+HTTPPath, token, initializeMsg); code != http.StatusOK {
		t.Errorf("a JWT signed by a key of the JWKS URL: %d %s, want 200", code, body)
	}
	if code, _, _ := post(t, srv.URL+HTTPPath, newJWTIssuer(t, "url-key").sign(t, jwt.MapClaims{"iss": "https://issuer.test", "aud": "wasmtask", "exp": time.Now().Add(time.Hour).Unix(), "tenant": "carol"}), initializeMsg); code != http.StatusUnauthorized {
		t.Errorf("a JWT signed by another key: %d, want 401", code)
	}
}

// A tenant's share of the server is the tenant file's, or by default half
// of the instances and of the memory budget; calls of no tenant have none.
func TestTenantShareDefaults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tenants.yaml")
	doc := fmt.Sprintf("tenants:\n  own:\n    tokens: [%q]\n    maxInstances: 3\n    maxMemoryMiB: 100\n  plain:\n    tokens: [%q]\n",
		HashToken("own-token"), HashToken("plain-token"))
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{}, CacheDir: testCacheDir, TenantsFile: file,
		Policy: &Policy{MaxInstances: 10, MemoryBudgetMiB: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		tenant     string
		slots      int
		memoryMiB  uint64
		wantStrict bool
	}{
		{"own", 3, 100, true},
		{"plain", 5, 500, false}, // half the server's, not strict
		{"", 0, 0, false},        // a session or the stdio client
	} {
		slots, memory, strict := s.tenantShare(tc.tenant)
		if slots != tc.slots || memory != tc.memoryMiB<<20 || strict != tc.wantStrict {
			t.Errorf("tenant %q: share %d instances, %d MiB, strict %v; want %d, %d, %v", tc.tenant, slots, memory>>20, strict, tc.slots, tc.memoryMiB, tc.wantStrict)
		}
	}
}
