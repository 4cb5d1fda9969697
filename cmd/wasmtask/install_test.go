package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// These tests install and import wasmtask the way its users do, from its
// module path through a module proxy, with no clone: `go install
// github.com/wasmtask/wasmtask/cmd/wasmtask@latest` for operators, and a
// go.mod that requires github.com/wasmtask/wasmtask for plugin authors.
// There is no network to the repository host here, so the proxy is a
// directory (GOPROXY=file://…) holding this working tree as one release,
// zipped by golang.org/x/mod/zip, the code module proxies zip with: a file
// name a module zip cannot hold, a nested module, a replace directive or
// an embedded file left out of the zip fails here as it would for a user.

// installVersion is the release the proxy serves.
const installVersion = "v0.0.1-installtest"

// modulePath is this module's path, as users write it.
const modulePath = "github.com/wasmtask/wasmtask"

// goEnv is a go command environment that resolves this module only
// through a file proxy holding the working tree as installVersion, and its
// dependencies from the module cache's downloads, without the network.
type goEnv struct {
	env   []string
	gobin string // where go install writes
	proxy string // the proxy directory
}

// needInstallTools skips t without git (it lists the module's files) or
// the go command ([hosttest.MissingToolchain]: under CI=true a missing tool
// fails the test).
func needInstallTools(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the module from a module proxy; skipped with -short")
	}
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			hosttest.MissingToolchain(t, "apt-get install "+tool, tool+" is needed: "+err.Error())
		}
	}
}

// newGoEnv writes the file proxy and returns the environment that uses it.
// Its module cache is private (a module version, once extracted, is never
// extracted again: a shared cache would keep a stale copy of
// installVersion), and filled from the shared cache's downloads.
func newGoEnv(t *testing.T) *goEnv {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	base := userGoEnv()
	sharedDownloads := filepath.Join(goEnvValue(t, base, "GOMODCACHE"), "cache", "download")
	dir := t.TempDir()
	e := &goEnv{proxy: filepath.Join(dir, "proxy"), gobin: filepath.Join(dir, "bin")}
	writeModuleToProxy(t, root, e.proxy, installVersion)
	// The module cache is read-only; go clean empties it.
	t.Cleanup(func() { e.run(t, dir, "go", "clean", "-modcache") })
	e.env = append(slices.DeleteFunc(base, func(kv string) bool {
		// A workspace or GOFLAGS=-mod=vendor of the caller must not apply.
		return strings.HasPrefix(kv, "GOWORK=") || strings.HasPrefix(kv, "GOFLAGS=")
	}),
		"GOPROXY=file://"+filepath.ToSlash(e.proxy)+",file://"+filepath.ToSlash(sharedDownloads),
		"GOSUMDB=off", // the test release is in no checksum database
		"GONOSUMDB=", "GOPRIVATE=", "GOWORK=off", "GOTOOLCHAIN=local",
		// -trimpath keeps compiled packages independent of the private
		// module cache's path, so that the build cache serves the
		// dependencies from one run to the next.
		"GOFLAGS=-modcacherw -trimpath",
		"GOMODCACHE="+filepath.Join(dir, "modcache"),
		"GOBIN="+e.gobin,
	)
	return e
}

// userGoEnv is the environment for go commands the tests run: the tests'
// own, with the user's cache directory, which holds the build cache
// (TestMain moves it for the server's compile cache).
func userGoEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "XDG_CACHE_HOME=") })
	if userCacheHomeSet {
		env = append(env, "XDG_CACHE_HOME="+userCacheHome)
	}
	return env
}

func goEnvValue(t *testing.T, env []string, name string) string {
	t.Helper()
	cmd := exec.Command("go", "env", name)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// run runs a command in dir with e's environment and returns its output;
// a failure fails t with the output.
func (e *goEnv) run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeModuleToProxy zips the module at root as version into proxy, in
// the layout of the GOPROXY protocol: @v/list, .info, .mod and .zip. The
// files are those git would commit (tracked, or untracked and not
// ignored), as they are in the working tree, so that the test checks the
// change under test; the zip holds what a proxy's would.
func writeModuleToProxy(t *testing.T, root, proxy, version string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the test lists the module's files with git)", err)
	}
	var files []modzip.File
	for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, repoFile{root: root, path: p, info: fi})
	}
	checked, err := modzip.CheckFiles(files)
	if err != nil {
		t.Fatalf("the module cannot be zipped as a release: %v", err)
	}
	if len(checked.Omitted) > 0 {
		t.Logf("left out of the module zip, as a proxy would: %v", checked.Omitted)
	}
	dir := filepath.Join(proxy, filepath.FromSlash(modulePath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	z, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.Create(z, module.Version{Path: modulePath, Version: version}, files); err != nil {
		t.Fatalf("zipping the module: %v", err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":"2026-01-02T15:04:05Z"}`, version)
	for name, data := range map[string]string{"list": version + "\n", version + ".info": info, version + ".mod": string(gomod)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// repoFile is a file of the working tree, for modzip.
type repoFile struct {
	root, path string // path is slash-separated, relative to root
	info       os.FileInfo
}

func (f repoFile) Path() string                { return f.path }
func (f repoFile) Lstat() (os.FileInfo, error) { return f.info, nil }
func (f repoFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.root, filepath.FromSlash(f.path)))
}

// TestGoInstall: `go install github.com/wasmtask/wasmtask/cmd/wasmtask@latest`
// builds from the module zip alone; the binary reports the release's
// version in --version and in serverInfo, and serves the embedded tools.
func TestGoInstall(t *testing.T) {
	needInstallTools(t)
	e := newGoEnv(t)
	e.run(t, t.TempDir(), "go", "install", modulePath+"/cmd/wasmtask@latest")
	bin := filepath.Join(e.gobin, "wasmtask")

	out, err := exec.Command(bin, "--version").Output()
	if got, want := strings.TrimSpace(string(out)), "wasmtask "+installVersion; err != nil || got != want {
		t.Errorf("wasmtask --version = %q, %v; want %q", got, err, want)
	}

	// On stdio: serverInfo names the version, and an embedded tool runs.
	c, stderr, wait := startStdio(t, bin, "--cache-dir", "")
	var init struct {
		ServerInfo struct{ Name, Version string } `json:"serverInfo"`
	}
	if err := c.Initialize(nil).Decode(&init); err != nil {
		t.Fatal(err)
	}
	if init.ServerInfo.Name != "wasmtask" || init.ServerInfo.Version != installVersion {
		t.Errorf("serverInfo = %+v, want wasmtask %s", init.ServerInfo, installVersion)
	}
	res := c.CallTool("add", map[string]any{"a": 2, "b": 3})
	var sum struct{ Sum int }
	if err := json.Unmarshal(res.StructuredContent, &sum); err != nil || res.IsError || sum.Sum != 5 {
		t.Errorf("add(2, 3) = %s (isError %v), want sum 5", res.StructuredContent, res.IsError)
	}
	c.Close()
	if err := wait(); err != nil {
		t.Errorf("serve exited with %v at the end of its input:\n%s", err, stderr.String())
	}
}

// A plugin author's module, outside this repository: the go.mod README.md
// and abi/guest's doc tell them to write, and a tool using the SDK.
const (
	pluginGoMod = `module example.com/greet

go 1.26.0

require github.com/wasmtask/wasmtask ` + installVersion + `
`
	pluginMain = `package main

import "github.com/wasmtask/wasmtask/abi/guest"

type greetArgs struct {
	Name string ` + "`json:\"name\"`" + `
}

func main() {
	guest.Run(guest.Tool{
		Name:        "greet",
		Description: "Greets someone.",
		InputSchema: ` + "`" + `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}` + "`" + `,
		Handler: guest.Handle(func(c *guest.Call, in greetArgs) (guest.Result, error) {
			return guest.Text("Hello, " + in.Name + "!"), nil
		}),
	})
}
`
)

// TestGuestSDKFromModulePath: a module outside the repository that
// requires github.com/wasmtask/wasmtask builds a tool with abi/guest for
// GOOS=wasip1, and the host serves and calls it.
func TestGuestSDKFromModulePath(t *testing.T) {
	needInstallTools(t)
	e := newGoEnv(t)
	dir := t.TempDir()
	for name, data := range map[string]string{"go.mod": pluginGoMod, "main.go": pluginMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.run(t, dir, "go", "mod", "tidy")
	// The go.mod needs nothing more, and the module graph is pruned at
	// wasmtask (go.mod's go directive is 1.17 or later): the author's
	// go.sum names wasmtask alone, none of the host's dependencies.
	if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || string(b) != pluginGoMod {
		t.Errorf("go mod tidy rewrote the plugin's go.mod (%v):\n%s\nwant it as written:\n%s", err, b, pluginGoMod)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(sum)), "\n") {
		if !strings.HasPrefix(line, modulePath+" "+installVersion+" ") && !strings.HasPrefix(line, modulePath+" "+installVersion+"/go.mod ") {
			t.Errorf("the plugin's go.sum names more than wasmtask: %q", line)
		}
	}
	e.env = append(e.env, "GOOS=wasip1", "GOARCH=wasm")
	e.run(t, dir, "go", "build", "-o", "greet.wasm", ".")

	var out, errOut strings.Builder
	err = runCall(t.Context(), []string{filepath.Join(dir, "greet.wasm"), "greet", "--args", `{"name":"Ada"}`},
		terminal{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
	if err != nil {
		t.Fatalf("wasmtask call greet.wasm greet: %v\n%s", err, errOut.String())
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "Hello, Ada!" {
		t.Errorf("greet(Ada) = %s (%v), want the text Hello, Ada!", out.String(), err)
	}
}

// TestGuestSDKFromClone: until the module is published, a plugin author
// builds against a clone with the replace line README.md and ABI.md give:
// a module outside the repository requires wasmtask at v0.0.0, replaced by
// the clone's directory, and its tool builds and serves.
func TestGuestSDKFromClone(t *testing.T) {
	needInstallTools(t)
	e := newGoEnv(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goMod := "module example.com/greet\n\ngo 1.26.0\n\nrequire github.com/wasmtask/wasmtask v0.0.0\n\nreplace github.com/wasmtask/wasmtask => " + root + "\n"
	for name, data := range map[string]string{"go.mod": goMod, "main.go": pluginMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.run(t, dir, "go", "mod", "tidy")
	e.env = append(e.env, "GOOS=wasip1", "GOARCH=wasm")
	e.run(t, dir, "go", "build", "-o", "greet.wasm", ".")
	var out, errOut strings.Builder
	err = runCall(t.Context(), []string{filepath.Join(dir, "greet.wasm"), "greet", "--args", `{"name":"Ada"}`},
		terminal{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
	if err != nil || !strings.Contains(out.String(), "Hello, Ada!") {
		t.Errorf("wasmtask call greet.wasm greet: %v %s\n%s", err, out.String(), errOut.String())
	}
}
