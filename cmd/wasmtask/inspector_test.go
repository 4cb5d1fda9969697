package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// inspectorDir pins the MCP Inspector and the Node it needs; `npm ci` there
// installs them (.ci/run does).
const inspectorDir = "testdata/inspector"

// bundledTools are the tools `wasmtask serve` serves without --tools,
// sorted.
var bundledTools = []string{"add", "long_job", "sha256", "slow_count", "word_count"}

// inspectorCalls is the result text of each tools/call the README may
// show, keyed by the tool's name and its --tool-arg pairs.
var inspectorCalls = map[string]string{
	"add a=2 b=3": "5",
}

// TestInspector runs README.md's MCP Inspector CLI commands, with the
// Inspector version README names, against `wasmtask serve`: over stdio
// (the Inspector starts the server) and over HTTP (the test starts it and
// puts its URL in place of README's). The README's commands change only in
// the binary's path, the URL and an added --cache-dir.
func TestInspector(t *testing.T) {
	node, inspector := needInspector(t)
	commands := readmeInspectorCommands(t)
	bin := hosttest.BuildWasmtask(t, "../..", userGoEnv())
	cacheDir := t.TempDir() // shared: the modules compile once
	home := t.TempDir()     // the Inspector's own state stays out of the user's home
	var url string          // of the HTTP server, started for the first HTTP command
	var tenantURL string    // of the one with a tenant file, for the first command with a token

	seen := map[string]bool{}
	for _, c := range commands {
		opts, server := cutWords(c.args, "--")
		method := flagValues(opts, "--method")
		if len(method) != 1 || len(server) == 0 {
			t.Errorf("README: %s: want one --method, then -- and the server", c.line)
			continue
		}
		transport := "stdio"
		switch {
		case server[0] == "wasmtask" && len(server) > 1 && server[1] == "serve":
			server = slices.Concat([]string{bin}, server[1:], []string{"--cache-dir", cacheDir})
		case server[0] == "http://127.0.0.1:8080/mcp" && len(server) == 1 && c.bearer:
			transport = "http+bearer"
			if tenantURL == "" {
				tenantURL = startTenantServe(t, bin, cacheDir)
			}
			server = []string{tenantURL}
			for i, o := range opts {
				if o == bearerWord {
					opts[i] = "Authorization: Bearer " + inspectorToken
				}
			}
		case server[0] == "http://127.0.0.1:8080/mcp" && len(server) == 1:
			transport = "http"
			if url == "" {
				p := startServe(t, bin, "--http", "127.0.0.1:0", "--cache-dir", cacheDir)
				url = p.await(regexp.MustCompile(`wasmtask: listening on (http://\S+)`))[1]
			}
			server = []string{url}
		default:
			t.Errorf("README: %s: want the server `wasmtask serve …` or http://127.0.0.1:8080/mcp after --", c.line)
			continue
		}
		name := transport + " " + method[0]
		seen[name] = true
		run := func(t *testing.T, opts []string) ([]byte, string, error) {
			args := slices.Concat([]string{inspector}, opts, []string{"--"}, server)
			cmd := exec.CommandContext(t.Context(), node, args...)
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }), "HOME="+home)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			return out, stderr.String(), err
		}
		t.Run(name, func(t *testing.T) {
			if c.bearer {
				// Without the header, the same command is refused: the
				// token is what lets it in.
				noHeader := slices.DeleteFunc(slices.Clone(opts), func(o string) bool { return strings.HasPrefix(o, "Authorization: ") })
				noHeader = slices.DeleteFunc(noHeader, func(o string) bool { return o == "--header" })
				if out, _, err := run(t, noHeader); err == nil {
					t.Errorf("%s without its --header: succeeded against a server with a tenant file:\n%s", c.line, out)
				}
			}
			out, stderr, err := run(t, opts)
			if err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", c.line, err, out, stderr)
			}
			switch method[0] {
			case "tools/list":
				var res struct{ Tools []struct{ Name string } }
				if err := json.Unmarshal(out, &res); err != nil {
					t.Fatalf("%s: stdout is not a tools/list result: %v\n%s", c.line, err, out)
				}
				var names []string
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
				}
				slices.Sort(names)
				if !slices.Equal(names, bundledTools) {
					t.Errorf("%s: tools %q, want the bundled %q", c.line, names, bundledTools)
				}
			case "tools/call":
				call := strings.Join(append(flagValues(opts, "--tool-name"), flagValues(opts, "--tool-arg")...), " ")
				want, ok := inspectorCalls[call]
				if !ok {
					t.Fatalf("README calls %q; the test knows the results of %q", call, inspectorCalls)
				}
				var res struct {
					Content []struct{ Type, Text string }
					IsError bool
				}
				if err := json.Unmarshal(out, &res); err != nil {
					t.Fatalf("%s: stdout is not a tools/call result: %v\n%s", c.line, err, out)
				}
				if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != want {
					t.Errorf("%s: result\n%s\nwant one text %q", c.line, out, want)
				}
			default:
				t.Errorf("README: %s: the test knows tools/list and tools/call, not %s", c.line, method[0])
			}
		})
	}
	for _, want := range []string{"stdio tools/list", "stdio tools/call", "http tools/list", "http tools/call", "http+bearer tools/list"} {
		if !seen[want] {
			t.Errorf("README shows no Inspector command for %s", want)
		}
	}
}

// inspectorToken is the static token of the tenant startTenantServe's
// server knows.
const inspectorToken = "inspector-test-token"

// startTenantServe serves HTTP with a tenant file whose one tenant has
// inspectorToken and sees every tool, and returns the endpoint's URL.
func startTenantServe(t *testing.T, bin, cacheDir string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(inspectorToken))
	tenants := filepath.Join(t.TempDir(), "tenants.json")
	file := `{"tenants": {"acme": {"tokens": ["sha256:` + hex.EncodeToString(sum[:]) + `"]}}}`
	if err := os.WriteFile(tenants, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, bin, "--http", "127.0.0.1:0", "--tenants", tenants, "--cache-dir", cacheDir)
	return p.await(regexp.MustCompile(`wasmtask: listening on (http://\S+)`))[1]
}

// needInspector returns the pinned Node and the Inspector's launcher as npm
// ci installed them in inspectorDir. Without them the test is skipped,
// except under CI=true, where it fails: CI must run the Inspector.
func needInspector(t *testing.T) (node, inspector string) {
	t.Helper()
	dir, err := filepath.Abs(inspectorDir)
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	inspector = filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	var missing []string
	for _, f := range []string{node, inspector} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		hosttest.MissingToolchain(t, "Node.js 22.19 or later, then npm ci in cmd/wasmtask/"+inspectorDir,
			"the MCP Inspector is not installed: "+strings.Join(missing, ", "))
	}
	if pinned, installed := inspectorVersion(t, "package.json"), inspectorVersion(t, "node_modules/@modelcontextprotocol/inspector/package.json"); installed != pinned {
		t.Fatalf("the installed Inspector is %s, package.json pins %s: run npm ci in cmd/wasmtask/%s", installed, pinned, inspectorDir)
	}
	return node, inspector
}

// inspectorVersion reads the Inspector's version from a package.json in
// inspectorDir: the pin (in dependencies) or the installed package's own.
func inspectorVersion(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(inspectorDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version      string
		Dependencies map[string]string
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if v := pkg.Dependencies["@modelcontextprotocol/inspector"]; v != "" {
		return v
	}
	return pkg.Version
}

type inspectorCommand struct {
	line   string   // as README shows it, continuation lines joined
	args   []string // after `npx @modelcontextprotocol/inspector@VERSION`; bearerWord for the header's value
	bearer bool     // it sends readmeBearerHeader
}

// readmeBearerHeader is the one quoted argument README's Inspector commands
// may have: the header with a tenant's token. The test reads it as one word,
// bearerWord, and runs it with a token of its own.
const (
	readmeBearerHeader = `"Authorization: Bearer $TOKEN"`
	bearerWord         = "\x00bearer"
)

// readmeInspectorCommands returns README.md's `npx
// @modelcontextprotocol/inspector@VERSION --cli …` commands, failing t
// unless every Inspector command there names the pinned version.
func readmeInspectorCommands(t *testing.T) []inspectorCommand {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), "")
	pinned := inspectorVersion(t, "package.json")
	for _, m := range regexp.MustCompile(`npx @modelcontextprotocol/inspector(@\S*)?`).FindAllStringSubmatch(readme, -1) {
		if m[1] != "@"+pinned {
			t.Errorf("README runs %s; want @modelcontextprotocol/inspector@%s, the version CI tests (%s/package.json)", m[0], pinned, inspectorDir)
		}
	}
	var commands []inspectorCommand
	for _, m := range regexp.MustCompile(`(?m)^npx @modelcontextprotocol/inspector@\S+ (--cli .*?)\s*(#.*)?$`).FindAllStringSubmatch(readme, -1) {
		args := strings.Replace(m[1], readmeBearerHeader, bearerWord, 1)
		bearer := args != m[1]
		if strings.ContainsAny(args, `'"$`) {
			t.Errorf("README: %s: the test splits commands at spaces only; write them without quotes or variables, but for --header %s", m[0], readmeBearerHeader)
			continue
		}
		commands = append(commands, inspectorCommand{line: m[0], args: strings.Fields(args), bearer: bearer})
	}
	if len(commands) == 0 {
		t.Fatal("README.md shows no MCP Inspector --cli command")
	}
	return commands
}

// cutWords splits words around the first sep; after is nil without one.
func cutWords(words []string, sep string) (before, after []string) {
	if i := slices.Index(words, sep); i >= 0 {
		return words[:i], words[i+1:]
	}
	return words, nil
}

// flagValues returns the value of each `name value` in words.
func flagValues(words []string, name string) []string {
	var values []string
	for i := 0; i+1 < len(words); i++ {
		if words[i] == name {
			values = append(values, words[i+1])
		}
	}
	return values
}
