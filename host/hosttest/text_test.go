package hosttest

import "testing"

func TestCheckClientText(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		bad  bool
	}{
		{"plain error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"task not found: \"X\""}}`, false},
		{"tool error", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"tool \"a\" ran out of time: exceeded 30s"}],"isError":true}}`, false},
		{"package prefix", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"taskengine: task not found"}}`, true},
		{"package prefix in a tool error", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"module \"m\": wasmrt: invalid arguments"}],"isError":true}}`, true},
		{"Go type", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"got *wasmrt.GuestError"}]}}`, true},
		{"config field", `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"A","status":"failed","statusMessage":"result over MaxResultBytes"}}`, true},
		{"stack trace", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"panic at engine.go:42"}}`, true},
		{"log data", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"abi: invalid result"}}`, true},
		{"schemas are the tool's own", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","description":"host: x"}}]}}`, false},
		{"localhost is not a package", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"fetched http://localhost:8080/"}]}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckClientText([]byte(tt.msg))
			if (err != nil) != tt.bad {
				t.Errorf("CheckClientText(%s) = %v, want error: %v", tt.msg, err, tt.bad)
			}
		})
	}
}

func TestCheckClientTextGoDecoding(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"unmarshaling \"5\" into a *mcpserver.taskIDParams: json: cannot unmarshal"}}`,
		`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"cannot unmarshal number into Go struct field CallToolParamsRaw.name of type string"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid ID type map[string]interface {}"}}`,
	} {
		if CheckClientText([]byte(msg)) == nil {
			t.Errorf("CheckClientText(%s) = nil, want an error", msg)
		}
	}
}
