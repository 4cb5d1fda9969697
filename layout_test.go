package wasmtask_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/wasmtask/wasmtask"

// rule says which imports a directory's Go files may use. Standard library
// imports (no dot in the first path element) are always allowed.
type rule struct {
	dir   string   // directory prefix, slash-separated, relative to the module root
	allow []string // import path prefixes allowed besides the standard library
	tests []string // extra prefixes allowed in _test.go files
	deny  []string // standard library packages its non-test files may not import
}

// rules mirror the dependency table of the design: the contract is a leaf,
// wazero and go-sdk each live in one internal package of host, and nothing
// below host reaches up. The first matching (longest) prefix wins.
var rules = []rule{
	{dir: "abi", allow: []string{module + "/abi"}},
	{dir: "taskengine", allow: []string{module + "/taskengine", "github.com/hashicorp/golang-lru/v2"}},
	{dir: "plugins", allow: []string{module + "/plugins", module + "/abi", "github.com/fsnotify/fsnotify"}},
	// The JSON Schema room: jsonschema-go and the standard library, never
	// the Wasm runtime or the MCP SDK.
	{dir: "host/internal/schema", allow: []string{module + "/host/internal/schema", "github.com/google/jsonschema-go"}},
	// The bytecode rewriter: the standard library only, so that a Wasm
	// proposal lands here alone. Its tests use wazero as the oracle of the
	// rewrite (a module wazero refuses must stay refused).
	{dir: "host/internal/wasmcode", allow: []string{module + "/host/internal/wasmcode"},
		tests: []string{module + "/host/hosttest", "github.com/tetratelabs/wazero"}},
	// Linear memory backings: the standard library only.
	{dir: "host/internal/linearmem", allow: []string{module + "/host/internal/linearmem"}},
	// The readers and writers behind a call's WASI streams: the standard
	// library only (the runtime binds them to wazero).
	{dir: "host/internal/guestio", allow: []string{module + "/host/internal/guestio"}},
	// Bounding a call's notifications: the contract's events only.
	{dir: "host/internal/guestevents", allow: []string{module + "/host/internal/guestevents", module + "/abi"}, tests: []string{"github.com/google/go-cmp"}},
	// The table of resources, templates and prompts a generation serves.
	{dir: "host/internal/primitives", allow: []string{module + "/host/internal/primitives", module + "/host/internal/uritemplate", module + "/abi"}},
	// Resource template matching: the standard library and the contract's
	// one template parser.
	{dir: "host/internal/uritemplate", allow: []string{module + "/host/internal/uritemplate", module + "/abi"}},
	// Strict decoding of the operator's files: the standard library only.
	{dir: "host/internal/strictjson", allow: []string{module + "/host/internal/strictjson"}},
	// The tenant file and who a request is: JWT and JWKS libraries, YAML
	// through strict JSON.
	{dir: "host/internal/tenancy", allow: []string{module + "/host/internal/tenancy", module + "/host/internal/strictjson",
		"github.com/golang-jwt/jwt/v5", "github.com/MicahParks/keyfunc/v3", "go.yaml.in/yaml/v3"}},
	// The operator's sandbox policy: parsing, validation and the limits
	// derived from it. The contract (result counts), plugins (modules,
	// naming rules), strict JSON, admission's queue constant and tenancy's
	// MaxQuotaMiB (the one MiB bound both operator files share); wasmrt
	// only for the Limits and Mount types it fills, never to run a guest.
	{dir: "host/internal/policy", allow: []string{module + "/host/internal/policy", module + "/abi", module + "/plugins",
		module + "/host/internal/strictjson", module + "/host/internal/admission", module + "/host/internal/tenancy", module + "/host/internal/wasmrt"}},
	// The admission controller: numbers and names in, the standard
	// library only (it knows nothing of Wasm, MCP or policy files).
	{dir: "host/internal/admission", allow: []string{module + "/host/internal/admission"}},
	// The compile cache on disk: files and MACs, the standard library
	// only; its tests use wazero as the oracle of what it stores.
	{dir: "host/internal/compilecache", allow: []string{module + "/host/internal/compilecache"},
		tests: []string{"github.com/tetratelabs/wazero"}},
	// The runtime: the one room that runs guests, and so the one that
	// imports wazero.
	{dir: "host/internal/wasmrt", allow: []string{module + "/abi", module + "/host/internal/wasmrt", module + "/host/internal/linearmem", module + "/host/internal/guestio", module + "/host/internal/guestevents", module + "/host/internal/schema", module + "/host/internal/wasmcode", module + "/host/internal/compilecache", "github.com/tetratelabs/wazero"},
		tests: []string{module + "/host/hosttest"}},
	// The MCP protocol room: go-sdk's server and the task engine; it
	// serves connections and never touches HTTP (its tests drive it
	// through the HTTP room).
	{dir: "host/internal/mcpserver", allow: []string{module + "/abi", module + "/taskengine", module + "/host/internal/mcpserver", module + "/host/internal/mcpconn", module + "/host/internal/mcpevents", module + "/host/internal/mcpstdio", module + "/host/internal/mcpwire", module + "/host/internal/roundstate", module + "/host/internal/mcperr", module + "/host/internal/taskcodec", "github.com/modelcontextprotocol/go-sdk", "github.com/google/jsonschema-go", "github.com/google/go-cmp"},
		tests: []string{"golang.org/x/tools/txtar", module + "/host/hosttest", module + "/host/internal/mcphttp"},
		deny:  []string{"net/http"}},
	// What an MCP client is told when something fails: go-sdk's JSON-RPC
	// error type, the task engine's errors and the errors of the session
	// connection and of a running tool's answers it words; never the MCP
	// room that sends them, nor host.
	{dir: "host/internal/mcperr", allow: []string{module + "/host/internal/mcperr", module + "/taskengine", module + "/host/internal/mcpconn", module + "/host/internal/mcpevents", "github.com/modelcontextprotocol/go-sdk/jsonrpc"},
		deny: []string{"net/http"}},
	// The stored form of the MCP layer's task values: the task engine's
	// Codec over the MCP shapes, the contract's questions, mcpevents'
	// answers and mcperr's failures; never the MCP room, nor host.
	{dir: "host/internal/taskcodec", allow: []string{module + "/host/internal/taskcodec", module + "/abi", module + "/taskengine", module + "/host/internal/mcperr", module + "/host/internal/mcpevents", module + "/host/internal/mcpwire", "github.com/modelcontextprotocol/go-sdk/jsonrpc"},
		tests: []string{"github.com/modelcontextprotocol/go-sdk/mcp"},
		deny:  []string{"net/http"}},
	// A session's connection under go-sdk: go-sdk's message types, the
	// MCP shapes, the message decoder's member reader and the task
	// engine's statuses; never the MCP room, which words what it writes.
	{dir: "host/internal/mcpconn", allow: []string{module + "/host/internal/mcpconn", module + "/host/internal/mcpwire", module + "/host/internal/rpcmsg", module + "/taskengine", "github.com/modelcontextprotocol/go-sdk"},
		deny: []string{"net/http"}},
	// A running tool's events and questions on their way to the client,
	// and the answers back: the guest contract, the task engine, the MCP
	// shapes and go-sdk's session; never the MCP room, which words what
	// a client reads.
	{dir: "host/internal/mcpevents", allow: []string{module + "/abi", module + "/taskengine", module + "/host/internal/mcpevents", module + "/host/internal/mcpwire", "github.com/modelcontextprotocol/go-sdk"},
		deny: []string{"net/http"}},
	// The MCP messages as Go values: go-sdk's types, the guest contract and
	// the JSON Schema library; it serves nothing (no task engine, no HTTP).
	{dir: "host/internal/mcpwire", allow: []string{module + "/abi", module + "/host/internal/mcpwire", "github.com/modelcontextprotocol/go-sdk", "github.com/google/jsonschema-go"},
		deny: []string{"net/http"}},
	// The seal of a 2026-07-28 round's requestState: the standard library
	// alone.
	{dir: "host/internal/roundstate", allow: []string{module + "/host/internal/roundstate"}},
	// The JSON-RPC message decoder both transports share: go-sdk's
	// message types and the standard library.
	{dir: "host/internal/rpcmsg", allow: []string{module + "/host/internal/rpcmsg", "github.com/modelcontextprotocol/go-sdk/jsonrpc"}},
	// The stdio transport: lines in, go-sdk's connection type out; never
	// the task engine or the MCP room.
	{dir: "host/internal/mcpstdio", allow: []string{module + "/host/internal/mcpstdio", module + "/host/internal/rpcmsg", "github.com/modelcontextprotocol/go-sdk"}},
	// The HTTP room: the front, the sessions and their streams, on go-sdk's
	// exported connection types; never the task engine or the MCP room.
	{dir: "host/internal/mcphttp", allow: []string{module + "/host/internal/mcphttp", module + "/host/internal/rpcmsg", "github.com/modelcontextprotocol/go-sdk"},
		tests: []string{module + "/host/hosttest"}},
	// The shared task store: the NATS client and embedded server beside
	// taskengine, never inside it.
	{dir: "host/internal/natsstore", allow: []string{module + "/taskengine", "github.com/nats-io/nats.go", "github.com/nats-io/nats-server/v2"}},
	{dir: "host/hosttest", allow: nil}, // the shared test client: standard library only
	// host also uses the library RATIONALE.md names for its metrics
	// (Prometheus); JWT, JWKS and YAML are the tenancy room's.
	{dir: "host", allow: []string{module + "/abi", module + "/taskengine", module + "/plugins", module + "/host", "github.com/google/jsonschema-go",
		"github.com/prometheus/client_golang"},
		// wazero in tests only: the raw baseline of BenchmarkCallPath.
		// go-sdk's client in tests only: a real client of the server.
		// nats-server in tests only: the shared store replicas use.
		// JWT signing in tests only: tokens the tenant tests issue.
		tests: []string{"github.com/google/go-cmp", "github.com/golang-jwt/jwt/v5", "go.yaml.in/yaml/v3", "github.com/tetratelabs/wazero", "github.com/prometheus/client_model", "github.com/modelcontextprotocol/go-sdk", "github.com/nats-io/nats-server/v2"}},
	// cmd's tests zip the module as a proxy would (golang.org/x/mod/zip) to
	// install it by its module path.
	{dir: "cmd", allow: []string{module + "/host", module + "/abi"}, tests: []string{module + "/host/hosttest", "golang.org/x/mod"}},
	{dir: "examples", allow: []string{module + "/abi"}, tests: []string{module + "/host"}},
	{dir: "sandbox_test", allow: []string{module + "/host", module + "/abi", module + "/sandbox_test"}, tests: []string{"github.com/modelcontextprotocol/go-sdk", "github.com/google/go-cmp"}},
	{dir: ".", allow: nil},
}

func ruleFor(dir string) *rule {
	var best *rule
	for i := range rules {
		r := &rules[i]
		if r.dir == "." || dir == r.dir || strings.HasPrefix(dir, r.dir+"/") {
			if best == nil || best.dir == "." || len(r.dir) > len(best.dir) {
				best = r
			}
		}
	}
	return best
}

func allowed(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// reachesInternal reports whether dir may not import path because path is
// inside an internal directory that dir is not below.
func reachesInternal(dir, path string) bool {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return false
	}
	i := strings.Index(rel+"/", "/internal/")
	if i < 0 && !strings.HasPrefix(rel, "internal/") {
		return false
	}
	parent := ""
	if i >= 0 {
		parent = rel[:i]
	}
	return parent != "" && dir != parent && !strings.HasPrefix(dir, parent+"/")
}

// testOnly is allowed in the tests of every package but abi: go-cmp, for
// readable diffs (it comes with go-sdk).
var testOnly = []string{"github.com/google/go-cmp"}

func permitted(dir, path string, r *rule, isTest bool) bool {
	if reachesInternal(dir, path) {
		return false
	}
	if isTest && allowed(path, testOnly) && !strings.HasPrefix(dir, "abi") {
		return true
	}
	if !isTest && allowed(path, r.deny) {
		return false
	}
	return isStd(path) || allowed(path, r.allow) || (isTest && allowed(path, r.tests))
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// isModule reports whether dir is the root of a module of its own (bench/:
// the benchmarks against peers, whose dependencies stay out of the
// product's go.mod). Like the go command, the layering stops there.
func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// walkGoFiles calls fn with the path of every Go file of the product's
// module: not under testdata, node_modules or a dot directory, and not in
// a module of its own.
func walkGoFiles(fn func(path string) error) error {
	return filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || isModule(path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		return fn(path)
	})
}

// TestLayering parses every Go file's import clause and fails on an import
// the design's dependency table forbids.
func TestLayering(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := walkGoFiles(func(path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		r := ruleFor(dir)
		isTest := strings.HasSuffix(path, "_test.go")
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if permitted(dir, p, r, isTest) {
				continue
			}
			t.Errorf("%s imports %q: not allowed for %s/ (allowed: stdlib, %v; tests also %v)", path, p, r.dir, r.allow, r.tests)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go files checked")
	}
}

// TestLayeringCatchesViolations proves the checker can fail.
func TestLayeringCatchesViolations(t *testing.T) {
	for _, tc := range []struct {
		dir, imp string
		isTest   bool
		want     bool
	}{
		{"abi", "github.com/tetratelabs/wazero", false, false},
		{"abi/guest", "encoding/json", false, true},
		{"taskengine", "github.com/modelcontextprotocol/go-sdk/mcp", false, false},
		{"taskengine", "github.com/hashicorp/golang-lru/v2", false, true},
		{"plugins", module + "/host", false, false},
		{"host", "github.com/tetratelabs/wazero", false, false},
		{"host/internal/wasmrt", "github.com/tetratelabs/wazero/api", false, true},
		{"host/internal/mcpserver", "github.com/tetratelabs/wazero", false, false},
		{"host/internal/wasmcode", "github.com/tetratelabs/wazero", false, false},
		{"host/internal/wasmcode", "github.com/tetratelabs/wazero", true, true},
		{"host/internal/wasmcode", module + "/abi", false, false},
		{"host/internal/schema", "github.com/tetratelabs/wazero", false, false},
		{"host/internal/compilecache", "github.com/tetratelabs/wazero", false, false},
		{"host/internal/compilecache", "github.com/tetratelabs/wazero", true, true},
		{"host/internal/compilecache", module + "/host/internal/wasmrt", false, false},
		{"host/internal/schema", "github.com/modelcontextprotocol/go-sdk/mcp", false, false},
		{"host/internal/wasmrt", module + "/host/internal/wasmcode", false, true},
		{"host/internal/wasmrt", module + "/host/internal/guestio", false, true},
		{"host/internal/guestio", "github.com/tetratelabs/wazero", false, false},
		{"host/internal/guestio", module + "/host/internal/wasmrt", false, false},
		{"host/internal/admission", module + "/host/internal/wasmrt", false, false},
		{"host/internal/policy", "github.com/tetratelabs/wazero", false, false},
		{"host/internal/policy", module + "/host/internal/mcpserver", false, false},
		{"host/internal/policy", module + "/host/internal/wasmrt", false, true},
		{"host/internal/admission", module + "/abi", false, false},
		{"host/internal/mcpserver", "net/http", false, false},
		{"host/internal/mcpserver", "net/http/httptest", false, false},
		{"host/internal/mcpserver", "net/http", true, true},
		{"host/internal/mcphttp", module + "/taskengine", false, false},
		{"host/internal/mcphttp", module + "/host/internal/mcpserver", false, false},
		{"host/internal/mcphttp", "github.com/modelcontextprotocol/go-sdk/jsonrpc", false, true},
		{"host/internal/mcpstdio", module + "/taskengine", false, false},
		{"host/internal/mcperr", module + "/host/internal/mcpserver", false, false},
		{"host/internal/mcperr", module + "/host", false, false},
		{"host/internal/mcperr", "github.com/modelcontextprotocol/go-sdk/mcp", false, false},
		{"host/internal/mcperr", "github.com/modelcontextprotocol/go-sdk/jsonrpc", false, true},
		{"host/internal/mcpserver", module + "/host/internal/mcperr", false, true},
		{"host/internal/taskcodec", module + "/host/internal/mcpserver", false, false},
		{"host/internal/taskcodec", module + "/host/internal/mcperr", false, true},
		{"host/internal/mcpserver", module + "/host/internal/taskcodec", false, true},
		{"host/internal/mcpwire", module + "/taskengine", false, false},
		{"host/internal/mcpwire", module + "/host/internal/mcpserver", false, false},
		{"host/internal/mcpwire", "net/http", false, false},
		{"host/internal/mcpstdio", module + "/host/internal/mcpserver", false, false},
		{"host/internal/mcpstdio", module + "/host/internal/rpcmsg", false, true},
		{"cmd/wasmtask", module + "/host/internal/wasmrt", false, false},
		{"examples/go/demo", module + "/host", false, false},
		{"examples", module + "/host", true, true},
		{"abi", "github.com/google/go-cmp/cmp", true, false},
		{"plugins", "github.com/google/go-cmp/cmp", true, true},
		{"plugins", "github.com/google/go-cmp/cmp", false, false},
		{"plugins", module + "/host", true, false},
		{"sandbox_test", module + "/host/internal/wasmrt", true, false},
	} {
		r := ruleFor(tc.dir)
		got := permitted(tc.dir, tc.imp, r, tc.isTest)
		if got != tc.want {
			t.Errorf("%s importing %s (test=%v): allowed=%v, want %v", tc.dir, tc.imp, tc.isTest, got, tc.want)
		}
	}
}

// maxRoomLines bounds the non-test Go lines of one package (a room): the
// design aims at about 3,000 and splits a room before it reaches this.
const maxRoomLines = 3500

// TestRoomSizes fails when a package's non-test Go files together pass
// maxRoomLines: the room has taken a second job, or should be split by
// the one it has.
func TestRoomSizes(t *testing.T) {
	lines := map[string]int{}
	err := walkGoFiles(func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines[filepath.ToSlash(filepath.Dir(path))] += strings.Count(string(b), "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 10 {
		t.Fatalf("counted %d packages: the walk missed the tree", len(lines))
	}
	for dir, n := range lines {
		if n > maxRoomLines {
			t.Errorf("%s has %d non-test lines, more than %d: split it by its jobs", dir, n, maxRoomLines)
		}
	}
}
