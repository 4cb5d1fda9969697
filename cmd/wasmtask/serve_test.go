package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// servedProcess is `wasmtask serve` running as a child process, with its
// stderr kept line by line.
type servedProcess struct {
	t   *testing.T
	cmd *exec.Cmd

	mu    sync.Mutex
	lines []string      // every stderr line so far
	more  chan struct{} // closed and replaced when a line is added
	ended bool          // stderr reached EOF
}

// startServe runs `bin serve args...` (bin from hosttest.BuildWasmtask); at cleanup
// it interrupts it and fails t unless it exits cleanly.
func startServe(t *testing.T, bin string, args ...string) *servedProcess {
	t.Helper()
	p := &servedProcess{t: t, cmd: exec.Command(bin, append([]string{"serve"}, args...)...), more: make(chan struct{})}
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.add(sc.Text(), false)
		}
		p.add("", true)
		io.Copy(io.Discard, pipe)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(os.Interrupt)
		<-read
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("serve exited with %v after an interrupt", err)
		}
	})
	return p
}

func (p *servedProcess) add(line string, end bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if end {
		p.ended = true
	} else {
		p.lines = append(p.lines, line)
	}
	close(p.more)
	p.more = make(chan struct{})
}

// await returns the first stderr line, printed so far or later, that
// matches re, and its submatches; the test fails if the process's stderr
// ends first.
func (p *servedProcess) await(re *regexp.Regexp) []string {
	p.t.Helper()
	for seen := 0; ; {
		p.mu.Lock()
		lines, ended, more := p.lines[seen:], p.ended, p.more
		p.mu.Unlock()
		for _, line := range lines {
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		}
		seen += len(lines)
		if ended {
			p.t.Fatalf("serve ended before printing a line matching %s", re)
		}
		<-more
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeOperations: JSON logs, the probes, the metrics endpoint apart
// from MCP, and SIGHUP reloading the policy file (a server-wide bound is a
// warning; an invalid file changes nothing) without stopping the server.
func TestServeOperations(t *testing.T) {
	needFile(t, addWasm)
	tools := t.TempDir()
	b, err := os.ReadFile(addWasm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "add.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"maxInstances": 8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, hosttest.BuildWasmtask(t, "../..", userGoEnv()), "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--log-format", "json",
		"--tools", tools, "--policy", policy, "--cache-dir", "")
	metricsURL := p.await(regexp.MustCompile(`^\{.*"msg":"metrics","url":"(http://\S+/metrics)"\}$`))[1]
	base := strings.TrimSuffix(p.await(regexp.MustCompile(`^\{.*"msg":"listening","url":"(http://\S+)"\}$`))[1], "/mcp")
	// Start-up says what it does: compiling, then how much it loaded.
	p.await(regexp.MustCompile(`^\{.*"msg":"compiling 1 module in the background \(no compile cache: every start compiles them\)"`))
	p.await(regexp.MustCompile(`^\{.*"msg":"loaded 1 tool from 1 module in [^"]+","tools":1,"modules":1,"problems":0,"durationMs":[0-9.]+\}$`))
	// The log is JSON, one object per line; the tools have loaded once a
	// reload reports nothing loading.
	loaded := p.await(regexp.MustCompile(`^\{.*"msg":"tools reloaded".*"loading":0.*\}$`))[0]
	var rec map[string]any
	if err := json.Unmarshal([]byte(loaded), &rec); err != nil || rec["tools"] != float64(1) {
		t.Fatalf("log line %s: %v, want JSON counting 1 tool", loaded, err)
	}

	if code, body := get(t, base+"/healthz"); code != 200 {
		t.Errorf("GET /healthz = %d %q, want 200", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Errorf("GET /readyz = %d %q, want 200 once the tools loaded", code, body)
	}
	if code, body := get(t, metricsURL); code != 200 || !strings.Contains(body, "\nwasmtask_tools 1\n") || !strings.Contains(body, "wasmtask_instances_max 8") {
		t.Errorf("GET /metrics = %d, want 200 with wasmtask_tools 1 and wasmtask_instances_max 8:\n%.1500s", code, body)
	}
	if code, _ := get(t, base+"/metrics"); code != 404 {
		t.Errorf("GET /metrics on the MCP listener = %d, want 404: metrics are served apart", code)
	}

	// A new policy: the tool's timeout applies, the instance bound waits
	// for a restart.
	if err := os.WriteFile(policy, []byte(`{"maxInstances": 4, "defaults": {"timeout": "3s"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	if w := p.await(regexp.MustCompile(`"msg":"SIGHUP: policy reloaded, but (maxInstances[^"]*)"`))[1]; !strings.Contains(w, "restart") {
		t.Errorf("warning %q does not say the bound waits for a restart", w)
	}
	p.await(regexp.MustCompile(`"msg":"SIGHUP: policy reloaded"`))

	// An invalid policy changes nothing, and the server keeps serving.
	if err := os.WriteFile(policy, []byte(`{"maxInstances": "many"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.await(regexp.MustCompile(`"msg":"SIGHUP: policy not reloaded; the previous one stays in force"`))
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Errorf("GET /readyz after a bad policy = %d, want 200", code)
	}

	// Every line so far, start-up included, is one JSON object; a
	// duration is a number of milliseconds.
	p.mu.Lock()
	lines := slices.Clone(p.lines)
	p.mu.Unlock()
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("stderr line %q is not a JSON object: %v", line, err)
		}
		for k, v := range rec {
			if _, ok := v.(float64); ok && k != "time" && strings.HasSuffix(strings.ToLower(k), "duration") {
				t.Errorf("line %q: %s is not in milliseconds (want %sMs)", line, k, k)
			}
		}
	}
}

func TestHashToken(t *testing.T) {
	var out strings.Builder
	if err := runHashToken(strings.NewReader("s3cret\n"), &out); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), host.HashToken("s3cret"); got != want || !strings.HasPrefix(got, "sha256:") {
		t.Errorf("hash-token = %q, want %q", got, want)
	}
	if err := runHashToken(strings.NewReader("\n"), &out); err == nil {
		t.Error("hash-token of an empty line succeeded")
	}
}

// TestHTTPExposure: without a tenant file HTTP binds loopback only, and a
// non-loopback address needs the Host names clients use.
func TestHTTPExposure(t *testing.T) {
	for _, tc := range []struct {
		addr           string
		auth, insecure bool
		hosts          []string
		publicURL      string
		wantErr        string
		wantHosts      []string
	}{
		{addr: "127.0.0.1:8080"},
		{addr: "[::1]:8080"},
		{addr: "localhost:8080", publicURL: "https://tools.example.com/mcp", wantHosts: []string{"tools.example.com", "localhost", "127.0.0.1", "::1"}},
		{addr: "0.0.0.0:8080", wantErr: "without authentication"},
		{addr: "10.0.0.5:8080", wantErr: "without authentication"},
		{addr: "example.com:80", wantErr: "without authentication"},
		{addr: "0.0.0.0:8080", insecure: true, wantErr: "--allowed-hosts"},
		{addr: "0.0.0.0:8080", auth: true, wantErr: "--allowed-hosts"},
		{addr: "0.0.0.0:8080", auth: true, hosts: []string{"tools.example.com"}, wantHosts: []string{"tools.example.com"}},
		{addr: "[::]:8080", auth: true, publicURL: "https://tools.example.com:8443/mcp", wantHosts: []string{"tools.example.com:8443"}},
		{addr: "0.0.0.0:8080", auth: true, publicURL: "not a url", wantErr: "not an absolute URL"},
	} {
		hosts, err := checkHTTPExposure(tc.addr, tc.auth, tc.insecure, tc.hosts, tc.publicURL)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: error %v, want one mentioning %q", tc, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: %v, want allowed", tc, err)
		case tc.wantErr == "" && !slices.Equal(hosts, tc.wantHosts):
			t.Errorf("%+v: hosts %v, want %v", tc, hosts, tc.wantHosts)
		}
	}
}

// TestServeCacheKeyFlag: --cache-key names the compile cache's key file;
// without it the server takes its default.
func TestServeCacheKeyFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cache-key", "/etc/wasmtask/cache.key"}, "/etc/wasmtask/cache.key"},
		{nil, ""},
	} {
		set, err := parseServe(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("parseServe %q: %v", tc.args, err)
		}
		if set.cfg.CacheKeyFile != tc.want {
			t.Errorf("parseServe %q: CacheKeyFile %q, want %q", tc.args, set.cfg.CacheKeyFile, tc.want)
		}
	}
}

// TestServeTenantsNeedHTTP: --tenants without --http is refused, saying
// why, instead of serving stdio as if the file guarded it.
func TestServeTenantsNeedHTTP(t *testing.T) {
	_, err := parseServe([]string{"--tenants", "tenants.yaml"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "needs --http") {
		t.Errorf("--tenants without --http: %v, want a refusal naming --http", err)
	}
}

// startStdio starts bin serve with args on stdio and returns its client,
// its stderr so far, and a wait for its exit.
func startStdio(t *testing.T, bin string, args ...string) (c *hosttest.Client, stderr *strings.Builder, wait func() error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return hosttest.NewClient(t, stdin, stdout), stderr, cmd.Wait
}

// TestServeStoreKeepsStdioResults: with --store DIR alone (its key file is
// made in DIR), a task's result is read back by the local user's next
// stdio session after the server restarts.
func TestServeStoreKeepsStdioResults(t *testing.T) {
	bin := hosttest.BuildWasmtask(t, "../..", userGoEnv())
	dir := filepath.Join(t.TempDir(), "store")
	session := func() (*hosttest.Client, func()) {
		c, stderr, wait := startStdio(t, bin, "--store", dir, "--cache-dir", "")
		c.Initialize(nil)
		return c, func() {
			c.CloseInput()
			if err := wait(); err != nil {
				t.Errorf("serve: %v\n%s", err, stderr)
			}
		}
	}
	c, end := session()
	task := c.StartTask("slow_count", map[string]any{"steps": 1, "delay_ms": 1}, 600000)
	first := c.TaskResult(task.TaskID)
	end()
	if fi, err := os.Stat(filepath.Join(dir, "store.keys")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the store's key file: %v, %v; want one of mode 0600 in the store", fi, err)
	}

	c, end = session()
	defer end()
	again := c.TaskResult(task.TaskID)
	if len(again.Content) != 1 || len(first.Content) != 1 || again.Content[0].Text != first.Content[0].Text {
		t.Errorf("after a restart: %+v, want the first run's %+v", again, first)
	}
}

// TestServeStoreReplicasFlag: --store-replicas reaches the store's
// configuration, needs --store, and is refused out of JetStream's range.
func TestServeStoreReplicasFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    int
		wantErr string
	}{
		{args: []string{"--store", "nats://127.0.0.1:4222", "--store-keys", "k", "--store-replicas", "3"}, want: 3},
		{args: []string{"--store", "nats://127.0.0.1:4222", "--store-keys", "k"}, want: 0},
		{args: []string{"--store-replicas", "3"}, wantErr: "--store-replicas needs --store"},
		{args: []string{"--store", "nats://127.0.0.1:4222", "--store-replicas", "7"}, wantErr: "want 1 to 5"},
		{args: []string{"--store", "nats://127.0.0.1:4222", "--store-replicas", "-1"}, wantErr: "want 1 to 5"},
	} {
		set, err := parseServe(tc.args, io.Discard)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseServe %q: %v, want an error saying %q", tc.args, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("parseServe %q: %v", tc.args, err)
		case set.cfg.Store.Replicas != tc.want:
			t.Errorf("parseServe %q: Store.Replicas %d, want %d", tc.args, set.cfg.Store.Replicas, tc.want)
		}
	}
}
