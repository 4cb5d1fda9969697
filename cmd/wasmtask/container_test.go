package main

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestContainerImage checks a running container of the Dockerfile's image,
// with its default command, over MCP: the server names the version the
// image was built with, lists the bundled tools, and runs tools written in
// WAT, Go and C. It also checks that the default command's Host allowlist
// holds. WASMTASK_IMAGE_URL is the container's MCP endpoint and
// WASMTASK_IMAGE_VERSION the VERSION build argument;
// testdata/container/build-local.sh builds, runs and sets them. Without
// them the test is skipped: go test does not build images.
func TestContainerImage(t *testing.T) {
	url, version := os.Getenv("WASMTASK_IMAGE_URL"), os.Getenv("WASMTASK_IMAGE_VERSION")
	if url == "" || version == "" {
		t.Skip("WASMTASK_IMAGE_URL and WASMTASK_IMAGE_VERSION are unset: no container to check (testdata/container/build-local.sh runs one)")
	}

	c := hosttest.NewHTTPClient(t, url)
	var init struct {
		ServerInfo struct{ Name, Version string } `json:"serverInfo"`
	}
	if err := c.Initialize(nil).Decode(&init); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if init.ServerInfo.Name != "wasmtask" || init.ServerInfo.Version != version {
		t.Errorf("serverInfo = %+v, want wasmtask %s", init.ServerInfo, version)
	}

	var list struct{ Tools []struct{ Name string } }
	if err := c.Call("tools/list", nil).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, bundledTools) {
		t.Errorf("tools/list = %v, want the bundled tools %v", names, bundledTools)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string // the structured content
	}{
		{"add", map[string]any{"a": 2, "b": 3}, `{"sum":5}`},                                                                                 // WAT
		{"word_count", map[string]any{"text": "a b\nc\n"}, `{"words":3,"lines":2,"chars":6}`},                                                // Go
		{"sha256", map[string]any{"text": "abc"}, `{"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad","bytes":3}`}, // C
	} {
		var res hosttest.ToolResult
		if err := c.Call("tools/call", map[string]any{"name": tc.tool, "arguments": tc.args}).Decode(&res); err != nil {
			t.Errorf("%s: %v", tc.tool, err)
			continue
		}
		if res.IsError || !jsonEqual(t, res.StructuredContent, tc.want) {
			t.Errorf("%s(%v) = %s (isError %v, %q), want %s", tc.tool, tc.args, res.StructuredContent, res.IsError, res.Text(), tc.want)
		}
	}

	// A Host the default command does not allow (DNS rebinding) is refused.
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebind.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST with Host rebind.example: %s, want 403", resp.Status)
	}
}

// jsonEqual reports whether got and want are the same JSON value.
func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if json.Unmarshal(got, &g) != nil {
		return false
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}
