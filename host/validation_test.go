package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// TestArgumentsCheckedAfterAdmission: arguments are validated inside the
// call's admission slot, never on the server's time before it: a call that
// gets no slot ends with the admission's error although its arguments are
// invalid, and only a call that gets one learns that they are.
func TestArgumentsCheckedAfterAdmission(t *testing.T) {
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Policy: &host.Policy{Modules: map[string]host.ModulePolicy{
		"demo": {Tools: map[string]host.ToolPolicy{"long_job": {MaxConcurrency: 1}}},
	}}})
	entered, release := make(chan struct{}), make(chan struct{})
	ev := &events{elicit: func(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return abi.ElicitReply{Action: "decline"}, nil
	}}
	first := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "long_job", json.RawMessage(`{"steps":2,"delay_ms":1}`), ev)
		first <- err
	}()
	<-entered // the only slot is taken

	bad := json.RawMessage(`{"steps":"many"}`)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Call(gone, "long_job", bad, nil); errors.Is(err, host.ErrArguments) || !errors.Is(err, context.Canceled) {
		t.Errorf("a call waiting for the slot = %v, want its cancellation, not an arguments error", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the call holding the slot: %v", err)
	}
	if _, err := s.Call(context.Background(), "long_job", bad, nil); !errors.Is(err, host.ErrArguments) {
		t.Errorf("with a free slot = %v, want an arguments error", err)
	}
}
