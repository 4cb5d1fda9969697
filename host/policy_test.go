package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

// TestSetPolicy: a new policy's per-tool limits apply to the next calls,
// a change of a server-wide bound is a warning, and an invalid policy
// changes nothing.
func TestSetPolicy(t *testing.T) {
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: addModule(t)}}, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.ready(context.Background(), "")
	before := s.catalog.Load()
	p, err := ParsePolicy([]byte(`{"maxInstances": 3, "modules": {"add": {"tools": {"add": {"timeout": "7s"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := s.SetPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "maxInstances") {
		t.Errorf("warnings = %q, want one about maxInstances", warnings)
	}
	if got := s.Tools()[0].Policy.Timeout; time.Duration(got) != 7*time.Second {
		t.Errorf("timeout after SetPolicy = %v, want 7s", time.Duration(got))
	}
	if s.catalog.Load() == before {
		t.Error("SetPolicy did not build a new catalog")
	}
	if _, err := callOf(s, "add", `{"a":1,"b":2}`); err != nil {
		t.Errorf("call under the new policy: %v", err)
	}
	served := s.catalog.Load()
	if _, err := s.SetPolicy(&Policy{MaxInstances: -1}); err == nil {
		t.Error("SetPolicy accepted an invalid policy")
	}
	if s.catalog.Load() != served || time.Duration(s.Tools()[0].Policy.Timeout) != 7*time.Second {
		t.Error("an invalid policy changed what is served")
	}
}

func callOf(s *Server, tool, args string) (*abi.Result, error) {
	return s.Call(context.Background(), tool, json.RawMessage(args), nil)
}
