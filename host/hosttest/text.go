package hosttest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// forbiddenText matches what must never reach a client: a Go package
// prefix of ours ("taskengine: …"), a Go type ("*wasmrt.GuestError"), or a
// configuration field of a Go struct (they are the operator's words, and
// the client cannot change them).
var forbiddenText = regexp.MustCompile(strings.Join([]string{
	`\b(` + ourPackages + `|plugins|host|abi|mcp|json): [a-z]`,             // "taskengine: task not found"
	`\b(` + ourPackages + `)\.\w`,                                          // "mcpwire.TaskIDParams"
	`\*[a-z]\w*\.[A-Za-z]\w*`,                                              // "*mcp.CallToolParamsRaw"
	`\bGo (struct field|value of type)\b|\binterface \{\}|\bmap\[string\]`, // encoding/json's wording
	`\b(MaxResultBytes|MaxRetainedTasks|MaxRunningPerOwner|MaxArgumentBytes|MaxMessageBytes|MaxOutputBytes|MaxResultBlocks|MaxResultDepth|MaxResultValues|MaxLogBytes|MemoryMiB|MaxConcurrency|MaxQueue|MaxInstances|MemoryBudgetMiB|DefaultTTL|MaxTTL|CancelRemoved|ToolsDir)\b`,
	`\bgoroutine \d+\b|\.go:\d+`, // stack traces
}, "|"))

// ourPackages are the names of the packages whose Go names must never
// reach a client (the product's own and go-sdk's JSON-RPC).
const ourPackages = `taskengine|wasmrt|wasmcode|compilecache|admission|resultcache|natsstore|mcpserver|mcpwire|mcpstdio|mcphttp|rpcmsg|hosttest|jsonrpc2?`

// CheckClientText returns an error when any client-facing text in msg — an
// error message, a tool result's text, a status message, a log or progress
// message — names a Go package, a Go type or a configuration field.
func CheckClientText(msg json.RawMessage) error {
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		return nil // not ours to judge; the caller reports bad JSON
	}
	var bad []string
	walkText(v, "", func(path, s string) {
		if m := forbiddenText.FindString(s); m != "" {
			bad = append(bad, fmt.Sprintf("%s: %q (in %q)", path, m, clip(s)))
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("client-facing text names Go internals: %s", strings.Join(bad, "; "))
	}
	return nil
}

// textKeys are the members whose string values a client shows or logs.
var textKeys = map[string]bool{"message": true, "text": true, "statusMessage": true, "data": true}

// walkText calls f for every string under a text key, skipping what the
// client sent back to itself (tool schemas, arguments) and inputs.
func walkText(v any, path string, f func(path, s string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "inputSchema", "outputSchema", "requestedSchema", "arguments", "structuredContent":
				continue
			}
			p := path + "." + k
			if s, ok := x.(string); ok && textKeys[k] {
				f(p, s)
				continue
			}
			walkText(x, p, f)
		}
	case []any:
		for i, x := range v {
			walkText(x, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}
