package mcpserver

import (
	"testing"

	"github.com/wasmtask/wasmtask/taskengine"
)

// A client that writes its requests and closes its end at once (a script
// piping into the server) must still get every answer.
func TestStdioAnswersRequestsBeforeEOF(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick","arguments":{"name":"eof"}}}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/list"}`)
	c.closeInput()

	got := map[string]bool{}
	for {
		m, _, ok := c.nextRaw()
		if !ok {
			break
		}
		if id := idOf(m); id != "" {
			got[id] = true
		}
	}
	for _, id := range []string{"1", "2", "3"} {
		if !got[id] {
			t.Errorf("no answer to request %s before the session ended (got %v)", id, got)
		}
	}
	if err := <-c.done; err != nil {
		t.Errorf("ServeStdio: got %v, want nil at end of input", err)
	}
}
