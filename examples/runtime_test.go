package examples_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// These tests load each example, built from its sources, into a host.Runtime
// and check what a client sees only in part: the exact progress, status and
// log reports, the elicitation request, and cancellation through the context.

// loadExample builds ex and loads it into a fresh Runtime.
func loadExample(t *testing.T, ex example) *host.Module {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(buildDir(t, ex), ex.module))
	if err != nil {
		t.Fatal(err)
	}
	return loadBytes(t, strings.TrimSuffix(ex.module, ".wasm"), b)
}

func loadBytes(t *testing.T, name string, wasm []byte) *host.Module {
	t.Helper()
	ctx := context.Background()
	rt, err := host.NewRuntime(ctx, host.RuntimeConfig{CacheDir: compileCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	m, err := rt.Load(ctx, name, wasm)
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	return m
}

// recorder collects a call's reports; the host calls it from the goroutine
// running the guest.
type recorder struct {
	mu       sync.Mutex
	progress []string
	status   []string
	logs     []string
}

func (r *recorder) options() host.CallOptions {
	return host.CallOptions{
		OnProgress: func(p, total float64, msg string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, fmt.Sprintf("%g/%g %s", p, total, msg))
		},
		OnStatus: func(msg string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.status = append(r.status, msg)
		},
		OnLog: func(level int32, msg string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.logs = append(r.logs, fmt.Sprintf("%d %s", level, msg))
		},
	}
}

func (r *recorder) check(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func TestWATAddRuntime(t *testing.T) {
	m := loadExample(t, exampleFor(t, "wat"))
	var rec recorder
	// Spaces and member order are the client's; the host compacts the request.
	res, err := m.Call(context.Background(), "add", json.RawMessage(` { "b" : 22,
 "a": 20 } `), rec.options())
	if err != nil {
		t.Fatal(err)
	}
	if string(res.StructuredContent) != `{"sum":42}` || res.Content[0].Text != "42" {
		t.Errorf("add: got %+v, want 42", res)
	}
	rec.check(t, "log", rec.logs, "1 adding two integers")
}

func TestCSHA256Runtime(t *testing.T) {
	m := loadExample(t, exampleFor(t, "c"))
	in := strings.Repeat("0123456789abcdef", 160<<10) // 2.5 MiB: three chunks
	args, _ := json.Marshal(map[string]string{"text": in})
	var rec recorder
	res, err := m.Call(context.Background(), "sha256", args, rec.options())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(in))
	if want := hex.EncodeToString(sum[:]); res.Content[0].Text != want {
		t.Errorf("sha256: got %s, want %s", res.Content[0].Text, want)
	}
	rec.check(t, "progress", rec.progress,
		"1.048576e+06/2.62144e+06 hashed 1048576 of 2621440 bytes",
		"2.097152e+06/2.62144e+06 hashed 2097152 of 2621440 bytes",
		"2.62144e+06/2.62144e+06 hashed 2621440 of 2621440 bytes")
}

func TestGoDemoRuntime(t *testing.T) {
	m := loadExample(t, exampleFor(t, "go"))

	t.Run("long_job reports and asks", func(t *testing.T) {
		var rec recorder
		var asked []abi.ElicitRequest
		opts := rec.options()
		opts.Elicit = func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
			asked = append(asked, req)
			return abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"confirm":true}`)}, nil
		}
		res, err := m.Call(context.Background(), "long_job", json.RawMessage(`{"steps":4,"delay_ms":1}`), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.StructuredContent); got != `{"steps":4,"done":4,"confirmed":true}` {
			t.Errorf("result: got %s", got)
		}
		rec.check(t, "status", rec.status, "running the first half", "waiting for confirmation", "running the second half", "")
		rec.check(t, "progress", rec.progress, "1/4 step 1 of 4", "2/4 step 2 of 4", "3/4 step 3 of 4", "4/4 step 4 of 4")
		if len(asked) != 1 {
			t.Fatalf("got %d elicitations, want 1", len(asked))
		}
		if got, want := string(asked[0].RequestedSchema), `{"type":"object","properties":{"confirm":{"type":"boolean","title":"Continue the job"}},"required":["confirm"]}`; got != want {
			t.Errorf("requested schema: got %s, want %s", got, want)
		}
	})

	t.Run("long_job without elicitation", func(t *testing.T) {
		res, err := m.Call(context.Background(), "long_job", json.RawMessage(`{"steps":2,"delay_ms":1}`), host.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(res.Content[0].Text, "nobody can answer") {
			t.Errorf("got %+v, want a tool error saying nobody can answer", res)
		}
	})

	t.Run("slow_count stops when cancelled", func(t *testing.T) {
		// 10000 steps of a minute each: only cancellation ends it.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts := host.CallOptions{OnProgress: func(float64, float64, string) {}}
		timer := time.AfterFunc(100*time.Millisecond, cancel)
		defer timer.Stop()
		start := time.Now()
		_, err := m.Call(ctx, "slow_count", json.RawMessage(`{"steps":10000,"delay_ms":60000}`), opts)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want an error that is context.Canceled", err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("the call ended %v after it started, want soon after the cancel at 100ms", d)
		}
	})
}

// TestOtherABIVersionRefused checks what ABI.md promises about versions: a
// module built for another ABI is refused at load, saying which.
func TestOtherABIVersionRefused(t *testing.T) {
	needToolchain(t, exampleFor(t, "wat"))
	tests := []struct {
		name, wat string
	}{
		{"imports wasmtask_v2", `(module
			(import "wasmtask_v2" "log" (func (param i32 i32 i32)))
			(memory (export "memory") 1)
			(func (export "_start")))`},
		{"manifest says abi 2", `(module
			(import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
			(memory (export "memory") 1)
			(data (i32.const 16) "{\"abi\":2,\"tools\":[{\"name\":\"x\"}]}")
			(func (export "_start")
				(i32.store (i32.const 0) (i32.const 16))
				(i32.store (i32.const 4) (i32.const 32))
				(drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "m.wat")
			if err := os.WriteFile(src, []byte(tt.wat), 0o644); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command("wat2wasm", src, "-o", filepath.Join(dir, "m.wasm")).CombinedOutput(); err != nil {
				t.Fatalf("wat2wasm: %v\n%s", err, b)
			}
			wasm, err := os.ReadFile(filepath.Join(dir, "m.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			rt, err := host.NewRuntime(context.Background(), host.RuntimeConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			_, err = rt.Load(context.Background(), "m", wasm)
			if !errors.Is(err, abi.ErrVersion) || !strings.Contains(err.Error(), "v2") || !strings.Contains(err.Error(), "v1") {
				t.Errorf("Load: got %v, want abi.ErrVersion naming v2 and v1", err)
			}
		})
	}
}
