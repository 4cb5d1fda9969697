package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

func loadDefaultTool(t *testing.T, rt *Runtime, name string) *Module {
	t.Helper()
	wasm, err := os.ReadFile("defaulttools/" + name + ".wasm")
	if err != nil {
		t.Skipf("default tool %s: %v", name, err)
	}
	m, err := rt.Load(context.Background(), name, wasm)
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	if got, want := m.Digest(), ModuleDigest(wasm); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}
	return m
}

func TestRuntimeFacade(t *testing.T) {
	ctx := context.Background()
	rt, err := NewRuntime(ctx, RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m := loadDefaultTool(t, rt, "add")
	if tools := m.Tools(); len(tools) != 1 || tools[0].Name != "add" {
		t.Fatalf("Tools = %+v, want [add]", tools)
	}
	var logs []string
	res, err := m.Call(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), CallOptions{
		OnLog: func(level int32, msg string) { logs = append(logs, msg) },
	})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if res.Content[0].Text != "3" {
		t.Errorf("1+2 = %q, want 3", res.Content[0].Text)
	}
	if len(logs) == 0 {
		t.Error("OnLog received nothing, want the tool's log line")
	}

	_, err = m.Call(ctx, "add", nil, CallOptions{Policy: ToolPolicy{MemoryMiB: MaxMemoryMiB + 1}})
	if !errors.Is(err, ErrPolicy) {
		t.Errorf("Call with memory over the ceiling = %v, want ErrPolicy", err)
	}
	_, err = m.Call(ctx, "add", json.RawMessage(`{"a":"one"}`), CallOptions{})
	if !errors.Is(err, ErrArguments) {
		t.Errorf("Call with bad arguments = %v, want ErrArguments", err)
	}
	// add's answer does not fit in 10 bytes.
	_, err = m.Call(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), CallOptions{Policy: ToolPolicy{MaxOutputBytes: 10}})
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Kind != KindOutputTooLarge || ge.Module != "add" || ge.Tool != "add" {
		t.Errorf("Call with 10 bytes of output = %v, want a GuestError of kind %q", err, KindOutputTooLarge)
	}
	m.Close(ctx)
	if _, err := m.Call(ctx, "add", nil, CallOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
}

func TestRuntimeFacadeCancelAndElicit(t *testing.T) {
	ctx := context.Background()
	rt, err := NewRuntime(ctx, RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m := loadDefaultTool(t, rt, "demo")

	// long_job asks halfway; the asker cancels the call instead of answering.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var asked string
	_, err = m.Call(cctx, "long_job", json.RawMessage(`{"steps":2,"delay_ms":1}`), CallOptions{
		Elicit: func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
			asked = req.Message
			cancel()
			<-ctx.Done()
			return abi.ElicitReply{}, ctx.Err()
		},
	})
	if !errors.Is(err, context.Canceled) || asked == "" {
		t.Errorf("canceled during elicitation: err %v, asked %q; want context.Canceled after a question", err, asked)
	}

	_, err = m.Call(ctx, "slow_count", json.RawMessage(`{"steps":1000,"delay_ms":100}`), CallOptions{
		Policy: ToolPolicy{Timeout: Duration(100 * time.Millisecond)},
	})
	var ge *GuestError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ge) || ge.Kind != KindTimeout ||
		!strings.Contains(err.Error(), `module "demo" tool "slow_count": timeout`) {
		t.Errorf("slow_count past its timeout = %v, want a timeout GuestError", err)
	}
}
