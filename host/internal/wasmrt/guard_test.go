package wasmrt

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCallBombStops is the regression test of the entry charge (fuel.go): a guest whose
// endless work is a loop-free call tree must stop at its timeout and at a
// cancel, in both engines (wazero alone checks only at loop headers).
func TestCallBombStops(t *testing.T) {
	for _, interp := range []bool{false, true} {
		name := map[bool]string{false: "compiler", true: "interpreter"}[interp]
		t.Run(name+"/timeout", func(t *testing.T) {
			m := load(t, newRuntime(t, Config{Interpreter: interp}), "callbomb")
			_, err := m.Call(context.Background(), "callbomb", nil, with(Limits{Timeout: 100 * time.Millisecond}), nil)
			var ge *GuestError
			if !errors.As(err, &ge) || ge.Kind != KindTimeout {
				t.Fatalf("got %v, want a GuestError of kind %q", err, KindTimeout)
			}
		})
		t.Run(name+"/cancel", func(t *testing.T) {
			m := load(t, newRuntime(t, Config{Interpreter: interp}), "callbomb")
			ctx, cancel := context.WithCancel(context.Background())
			stop := time.AfterFunc(50*time.Millisecond, cancel)
			defer stop.Stop()
			_, err := m.Call(ctx, "callbomb", nil, with(Limits{Timeout: time.Minute}), nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want an error that is context.Canceled", err)
			}
		})
	}
}
