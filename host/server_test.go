package host_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// A server on the embedded tools, over stdio: tools/list shows what
// Server.Tools reports, with each tool's task support, and a tool answers
// tools/call.
func TestServeEmbeddedToolsOverStdio(t *testing.T) {
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir()})
	c := hosttest.Stdio(t, serveStdio(s))
	c.Initialize(nil)

	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if err := c.Call("tools/list", map[string]any{}).Decode(&list); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	got := map[string]string{}
	for _, tl := range list.Tools {
		got[tl.Name] = tl.Execution.TaskSupport
	}
	want := map[string]string{}
	for _, ti := range s.Tools() {
		want[ti.Name] = ti.TaskSupport
		if want[ti.Name] == "" {
			want[ti.Name] = abi.TaskForbidden // the default MCP leaves out
		}
	}
	if len(want) < 5 {
		t.Errorf("Server.Tools = %v, want the embedded default set", want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools/list's task support differs from Server.Tools (-want +got):\n%s", diff)
	}

	r := c.CallTool("add", map[string]any{"a": 2, "b": 40})
	if r.IsError || r.Text() != "42" {
		t.Errorf("add 2+40: got %+v, want the text 42", r)
	}
}
