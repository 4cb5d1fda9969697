package mcpstdio

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzStdioLine feeds arbitrary lines to the stdio connection's decoder: a
// line either decodes to a message or is answered with exactly one valid
// JSON-RPC error; nothing panics.
func FuzzStdioLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":5}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tasks/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"id":1}`,
		`not json`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.wasmtask/lifted-task":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(bytes.TrimSpace(line)) == 0 || bytes.ContainsRune(line, '\n') {
			return // the reader never hands these to decode
		}
		var out bytes.Buffer
		c := &Conn{out: &out, closed: make(chan struct{}), max: 1 << 20}
		msg, err := c.decode(line)
		written := out.String()
		if err == nil {
			if msg == nil {
				t.Fatal("no message and no error")
			}
			if written != "" {
				t.Fatalf("decoded a message and also wrote %q", written)
			}
			return
		}
		lines := strings.Split(strings.TrimSuffix(written, "\n"), "\n")
		if len(lines) != 1 {
			t.Fatalf("rejected line answered with %d lines: %q", len(lines), written)
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[0]), &resp); err != nil || resp.JSONRPC != "2.0" || resp.Error == nil || len(resp.ID) == 0 {
			t.Fatalf("answer is not a JSON-RPC error: %q (%v)", lines[0], err)
		}
	})
}
