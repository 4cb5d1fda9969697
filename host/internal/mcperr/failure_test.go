package mcperr

import (
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/taskengine"
)

// TestReplicaLostText: a task whose replica died reads as that, in its
// status message and its result.
func TestReplicaLostText(t *testing.T) {
	if got := TaskEndText("t", taskengine.ErrReplicaLost); !strings.Contains(got, "stopped before it finished") {
		t.Errorf("status message of a lost task: %q", got)
	}
	if got := FailureText("t", taskengine.ErrReplicaLost); !strings.Contains(got, "stopped before the call finished") {
		t.Errorf("result text of a lost task: %q", got)
	}
}
