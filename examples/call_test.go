package examples_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// These tests serve each example, built from its sources, with a
// host.Server and run its tools with Server.Call — the path of tools/call
// without the protocol — to check what a client sees only in part: the
// exact progress, status and log reports, the elicitation request, and
// cancellation through the context.

// newServer serves modules (file name → bytes) as a fixed set of tools and
// closes the server at the end of the test. Problems loading them are the
// caller's to check.
func newServer(t *testing.T, modules map[string][]byte) *host.Server {
	t.Helper()
	tools := fstest.MapFS{}
	for name, wasm := range modules {
		tools[name] = &fstest.MapFile{Data: wasm}
	}
	// The examples are compiled cold under -race beside every other test
	// package: the load bound is not what these tests are about, so it is
	// five times the operator's default.
	policy := &host.Policy{LoadTimeout: 5 * host.DefaultLoadTimeout}
	srv, err := host.New(context.Background(), host.Config{ToolsFS: tools, CacheDir: compileCache, Policy: policy})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Server.Close: %v", err)
		}
	})
	return srv
}

// serveModule serves the module wasm as file name and fails the test when
// the server refuses it.
func serveModule(t *testing.T, name string, wasm []byte) *host.Server {
	t.Helper()
	srv := newServer(t, map[string][]byte{name: wasm})
	if ps := srv.Problems(); len(ps) > 0 {
		t.Fatalf("the server refused %s: %v", name, ps)
	}
	return srv
}

// serveBuilt builds ex with build.sh and serves its module.
func serveBuilt(t *testing.T, ex example) *host.Server {
	t.Helper()
	return serveModule(t, ex.module, build(t, ex))
}

// recorder is the abi.Events of one call: it records the reports and
// answers elicitation with reply (nil: elicitation is unsupported). The
// host calls it from the goroutine running the guest.
type recorder struct {
	reply *abi.ElicitReply
	// onProgress, when set, is called after each progress report is recorded.
	onProgress func()

	mu       sync.Mutex
	progress []string
	status   []string
	logs     []string
	asked    []abi.ElicitRequest
}

var _ abi.Events = (*recorder)(nil)

func (r *recorder) Progress(p, total float64, msg string) {
	r.mu.Lock()
	r.progress = append(r.progress, fmt.Sprintf("%g/%g %s", p, total, msg))
	r.mu.Unlock()
	if r.onProgress != nil {
		r.onProgress()
	}
}

func (r *recorder) Status(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = append(r.status, msg)
}

func (r *recorder) Log(level int32, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf("%d %s", level, msg))
}

func (r *recorder) Elicit(_ context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, req)
	if r.reply == nil {
		return abi.ElicitReply{}, fmt.Errorf("test recorder: %w", errors.ErrUnsupported)
	}
	return *r.reply, nil
}

// check compares one of r's records (read under r's lock) with want.
func (r *recorder) check(t *testing.T, what string, got *[]string, want ...string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if fmt.Sprintf("%q", *got) != fmt.Sprintf("%q", want) {
		t.Errorf("%s: got %q, want %q", what, *got, want)
	}
}

// TestServedDigests checks that what the server reports serving is the
// module each example builds: same bytes, same tools.
func TestServedDigests(t *testing.T) {
	want := map[string]string{
		"go":             "long_job slow_count word_count",
		"go-preinit":     "long_job slow_count word_count",
		"c":              "sha256",
		"wat":            "add",
		"rust":           "greet top_words",
		"assemblyscript": "caesar",
		"conformance": "check_region confirm_delete failing_job greet json_schema_2020_12_tool multi_input protocol_error_job slow_compute " +
			"test_audio_content test_elicitation test_elicitation_sep1034_defaults test_elicitation_sep1330_enums test_embedded_resource " +
			"test_error_handling test_image_content test_input_required_result_capabilities test_input_required_result_elicitation " +
			"test_input_required_result_list_roots test_input_required_result_multi_round test_input_required_result_multiple_inputs " +
			"test_input_required_result_request_state test_input_required_result_sampling test_input_required_result_tampered_state " +
			"test_logging_tool test_missing_capability test_multiple_content_types test_sampling test_simple_text " +
			"test_streaming_elicitation test_tool_with_logging test_tool_with_progress test_tool_with_task " +
			"test_trigger_prompt_change test_trigger_tool_change",
	}
	for _, ex := range examples {
		t.Run(ex.lang, func(t *testing.T) {
			wasm := build(t, ex)
			srv := serveModule(t, ex.module, wasm)
			sum := sha256.Sum256(wasm)
			digest := "sha256:" + hex.EncodeToString(sum[:])
			module := strings.TrimSuffix(ex.module, ".wasm")
			var names []string
			for _, ti := range srv.Tools() {
				names = append(names, ti.Name)
				if ti.Module != module || ti.Digest != digest {
					t.Errorf("tool %s: served from module %s %s, want %s %s", ti.Name, ti.Module, ti.Digest, module, digest)
				}
			}
			if got := strings.Join(names, " "); got != want[ex.lang] {
				t.Errorf("tools: got %q, want %q", got, want[ex.lang])
			}
		})
	}
}

func TestWATAddCall(t *testing.T) {
	srv := serveBuilt(t, exampleFor(t, "wat"))
	var rec recorder
	// Spaces and member order are the client's; the host compacts the request.
	res, err := srv.Call(context.Background(), "add", json.RawMessage(` { "b" : 22,
 "a": 20 } `), &rec)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.StructuredContent) != `{"sum":42}` || len(res.Content) == 0 || res.Content[0].Text != "42" {
		t.Errorf("add: got %+v, want 42", res)
	}
	rec.check(t, "log", &rec.logs, fmt.Sprintf("%d adding two integers", abi.LogInfo))

	// Arguments outside the schema never reach the guest.
	_, err = srv.Call(context.Background(), "add", json.RawMessage(`{"a":1.5,"b":1}`), nil)
	var ae *host.ArgumentsError
	if !errors.As(err, &ae) || !errors.Is(err, host.ErrArguments) {
		t.Errorf("add(1.5, 1): got %v, want a *host.ArgumentsError", err)
	}
}

func TestCSHA256Call(t *testing.T) {
	srv := serveBuilt(t, exampleFor(t, "c"))
	in := strings.Repeat("0123456789abcdef", 160<<10) // 2.5 MiB: three chunks
	args, _ := json.Marshal(map[string]string{"text": in})
	var rec recorder
	res, err := srv.Call(context.Background(), "sha256", args, &rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(in))
	if want := hex.EncodeToString(sum[:]); len(res.Content) == 0 || res.Content[0].Text != want {
		t.Errorf("sha256: got %+v, want %s", res, want)
	}
	rec.check(t, "progress", &rec.progress,
		"1.048576e+06/2.62144e+06 hashed 1048576 of 2621440 bytes",
		"2.097152e+06/2.62144e+06 hashed 2097152 of 2621440 bytes",
		"2.62144e+06/2.62144e+06 hashed 2621440 of 2621440 bytes")
}

func TestGoDemoCall(t *testing.T) {
	srv := serveBuilt(t, exampleFor(t, "go"))

	t.Run("long_job reports and asks", func(t *testing.T) {
		rec := recorder{reply: &abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"confirm":true}`)}}
		res, err := srv.Call(context.Background(), "long_job", json.RawMessage(`{"steps":4,"delay_ms":1}`), &rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.StructuredContent); got != `{"steps":4,"done":4,"confirmed":true}` {
			t.Errorf("result: got %s", got)
		}
		rec.check(t, "status", &rec.status, "running the first half", "waiting for confirmation", "running the second half", "")
		rec.check(t, "progress", &rec.progress, "1/4 step 1 of 4", "2/4 step 2 of 4", "3/4 step 3 of 4", "4/4 step 4 of 4")
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.asked) != 1 {
			t.Fatalf("got %d elicitations, want 1", len(rec.asked))
		}
		if got, want := string(rec.asked[0].RequestedSchema), `{"type":"object","properties":{"confirm":{"type":"boolean","title":"Continue the job"}},"required":["confirm"]}`; got != want {
			t.Errorf("requested schema: got %s, want %s", got, want)
		}
	})

	t.Run("long_job without elicitation", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			ev   abi.Events
		}{
			{"no events", nil},
			{"events that cannot ask", &recorder{}},
		} {
			res, err := srv.Call(context.Background(), "long_job", json.RawMessage(`{"steps":2,"delay_ms":1}`), tt.ev)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "nobody can answer") {
				t.Errorf("%s: got %+v, want a tool error saying nobody can answer", tt.name, res)
			}
		}
	})

	t.Run("slow_count stops when cancelled", func(t *testing.T) {
		// 10000 steps of 100 ms, beyond the default 30 s timeout: only
		// cancellation ends it with context.Canceled. The cancel comes from
		// the first progress report, so the guest is running.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec := recorder{onProgress: cancel}
		_, err := srv.Call(ctx, "slow_count", json.RawMessage(`{"steps":10000,"delay_ms":100}`), &rec)
		var ge *host.GuestError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &ge) || ge.Kind != host.KindCanceled {
			t.Errorf("got %v, want a *host.GuestError of kind %q that is context.Canceled", err, host.KindCanceled)
		}
	})
}

// TestOtherABIVersionRefused checks what ABI.md promises about versions: a
// module built for another ABI is not served, and its problem names both
// versions and says to rebuild.
func TestOtherABIVersionRefused(t *testing.T) {
	for _, src := range []string{
		"testdata/import_v2.wat",   // imports wasmtask_v2
		"testdata/manifest_v2.wat", // its manifest says abi 2
	} {
		t.Run(src, func(t *testing.T) {
			srv := newServer(t, map[string][]byte{"m.wasm": hosttest.Wasm(t, src)})
			if got := srv.Tools(); len(got) != 0 {
				t.Errorf("Tools: got %v, want none", got)
			}
			ps := srv.Problems()
			if len(ps) != 1 {
				t.Fatalf("Problems: got %v, want one", ps)
			}
			p := ps[0]
			if p.Module != "m" || !errors.Is(p.Err, abi.ErrVersion) {
				t.Errorf("Problems: got module %q error %v, want module m and an abi.ErrVersion", p.Module, p.Err)
			}
			for _, want := range []string{"v2", "v1", "rebuild"} {
				if !strings.Contains(p.Err.Error(), want) {
					t.Errorf("problem %q does not say %q", p.Err, want)
				}
			}
		})
	}
}
