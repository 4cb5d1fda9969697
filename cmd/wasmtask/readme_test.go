package main

import (
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEClientConfigs: every MCP client configuration in README.md
// that starts the server (a JSON "command" with "args", or `claude mcp add
// … -- wasmtask serve …`) runs `wasmtask serve` with flags serve accepts.
func TestREADMEClientConfigs(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var commands [][]string
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		var doc map[string]json.RawMessage
		if json.Unmarshal([]byte(m[1]), &doc) != nil {
			continue // another JSON example (a policy file)
		}
		for _, key := range []string{"mcpServers", "servers"} {
			var servers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			}
			if doc[key] == nil {
				continue
			}
			if err := json.Unmarshal(doc[key], &servers); err != nil {
				t.Errorf("README: %s is not a map of servers: %v\n%s", key, err, m[1])
			}
			for _, s := range servers {
				if s.Command != "" {
					if !strings.HasSuffix(s.Command, "wasmtask") {
						t.Errorf("README: a client starts %q, want the wasmtask binary", s.Command)
					}
					commands = append(commands, s.Args)
				}
			}
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^claude mcp add .* -- wasmtask (.*?)\s*(#.*)?$`).FindAllStringSubmatch(string(b), -1) {
		commands = append(commands, strings.Fields(m[1]))
	}
	if len(commands) < 4 {
		t.Fatalf("found %d client commands in README.md, want at least 4 (Claude Code, Claude Desktop, VS Code, Cursor)", len(commands))
	}
	for _, args := range commands {
		if len(args) == 0 || args[0] != "serve" {
			t.Errorf("README: a client runs wasmtask %q, want serve …", args)
			continue
		}
		if _, err := parseServe(args[1:], io.Discard); err != nil {
			t.Errorf("README: wasmtask %s: %v", strings.Join(args, " "), err)
		}
	}
}
