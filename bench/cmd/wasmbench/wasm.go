package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/defaulttools"
)

// The arguments of the C figures: 16 bytes and 1 KiB of JSON in all.
var (
	args16B  = `{"text":"01234"}`
	args1KiB = `{"text":"` + strings.Repeat("x", 1024-len(`{"text":""}`)) + `"}`
)

// wordCountArgs is the Go module's input: a sentence to count.
const wordCountArgs = `{"text":"the quick brown fox jumps over the lazy dog"}`

// newServer starts an in-process wasmtask server on the given modules,
// result cache off (the figures measure calls, not cache hits).
func newServer(ctx context.Context, modules map[string][]byte, policy *host.Policy) (*host.Server, error) {
	fsys := fstest.MapFS{}
	for name, wasm := range modules {
		fsys[name+".wasm"] = &fstest.MapFile{Data: wasm}
	}
	s, err := host.New(ctx, host.Config{ToolsFS: fsys, Policy: policy, ResultCacheMaxTTL: -1})
	if err != nil {
		return nil, err
	}
	if p := s.Problems(); len(p) > 0 {
		s.Close()
		return nil, fmt.Errorf("wasmtask: %v", p)
	}
	return s, nil
}

// serverCall is the wasmtask side of the in-process figures: one
// Server.Call (catalog, admission, validation, a fresh instance, the
// answer decoded). nil events: the result cache is neither read nor
// written.
func serverCall(s *host.Server, tool, args string) func(int) error {
	raw := json.RawMessage(args)
	return func(int) error {
		res, err := s.Call(context.Background(), tool, raw, nil)
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("%s: tool error %v", tool, res.Content)
		}
		return nil
	}
}

// rawRuntime is a wazero runtime with the host modules a wasmtask tool
// imports (WASI, and no-ops for wasmtask_v1).
func rawRuntime(ctx context.Context, cfg wazero.RuntimeConfig) (wazero.Runtime, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	i32, f64 := api.ValueTypeI32, api.ValueTypeF64
	nop := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	hb := rt.NewHostModuleBuilder(abi.ImportModule)
	for name, sig := range map[string][2][]api.ValueType{
		abi.FuncProgress: {{f64, f64, i32, i32}, nil},
		abi.FuncStatus:   {{i32, i32}, nil},
		abi.FuncLog:      {{i32, i32, i32}, nil},
		abi.FuncElicit:   {{i32, i32}, {i32}},
		abi.FuncReply:    {{i32, i32}, {i32}},
	} {
		hb.NewFunctionBuilder().WithGoModuleFunction(nop, sig[0], sig[1]).Export(name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return rt, nil
}

// rawCall is the bare wazero work a wasmtask call wraps: instantiate the
// compiled module with the request on stdin, run _start, collect stdout.
// tuned applies wasmtask's module settings (anonymous instances so calls
// may overlap, crypto/rand); without it the module config is wazero's
// default.
func rawCall(rt wazero.Runtime, compiled wazero.CompiledModule, tool, args string, tuned bool) func(int) error {
	req, _ := json.Marshal(abi.Request{ABI: abi.Version, Method: abi.MethodCall, Tool: tool, Arguments: json.RawMessage(args)})
	return func(int) error {
		ctx := context.Background()
		var out bytes.Buffer
		cfg := wazero.NewModuleConfig().WithStdin(bytes.NewReader(req)).WithStdout(&out)
		if tuned {
			cfg = cfg.WithName("").WithRandSource(rand.Reader)
		}
		mod, err := rt.InstantiateModule(ctx, compiled, cfg)
		if err != nil {
			return err
		}
		mod.Close(ctx)
		if out.Len() == 0 {
			return errors.New("no output")
		}
		return nil
	}
}

func readPlugin(dir, name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("%w (bench/run.sh builds it)", err)
	}
	return b, nil
}

// figHostVsWazero is figure 1: the host's call path against the bare
// wazero work it wraps, same module, same runtime settings.
func figHostVsWazero(ctx context.Context) ([]side, []row, func(), error) {
	sha, err := defaulttools.FS.ReadFile("sha256.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	demo, err := defaulttools.FS.ReadFile("demo.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := newServer(ctx, map[string][]byte{"sha256": sha, "demo": demo}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	rt, err := rawRuntime(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	cleanup := func() { s.Close(); rt.Close(ctx) }
	shaC, err := rt.CompileModule(ctx, sha)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	demoC, err := rt.CompileModule(ctx, demo)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	sides := []side{
		{name: "wasmtask-c-16B", clients: 1, op: serverCall(s, "sha256", args16B)},
		{name: "wazero-c-16B", clients: 1, op: rawCall(rt, shaC, "sha256", args16B, true)},
		{name: "wasmtask-c-1KiB", clients: 1, op: serverCall(s, "sha256", args1KiB)},
		{name: "wazero-c-1KiB", clients: 1, op: rawCall(rt, shaC, "sha256", args1KiB, true)},
		{name: "wasmtask-go", clients: 1, op: serverCall(s, "word_count", wordCountArgs)},
		{name: "wazero-go", clients: 1, op: rawCall(rt, demoC, "word_count", wordCountArgs, true)},
	}
	rows := []row{
		{"1", "host call vs raw wazero, C sha256, 16 B", "wasmtask-c-16B", "wazero-c-16B", "≤ 1.10"},
		{"1", "host call vs raw wazero, C sha256, 1 KiB", "wasmtask-c-1KiB", "wazero-c-1KiB", "≤ 1.10"},
		{"1", "host call vs raw wazero, Go word_count", "wasmtask-go", "wazero-go", "≤ 1.10"},
	}
	return sides, rows, cleanup, nil
}

// figExtism is figure 2: a fresh instance per call against Extism's Go SDK
// calling one reused plugin instance that does the same work.
func figExtism(ctx context.Context, plugins string) ([]side, []row, func(), error) {
	sha, err := defaulttools.FS.ReadFile("sha256.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	ext, err := readPlugin(plugins, "extism_sha256.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := newServer(ctx, map[string][]byte{"sha256": sha}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	// Timeout 30 s, wasmtask's default: Extism then turns on wazero's
	// close-on-context-done, as wasmtask always does. A second plugin
	// without a timeout (so not cancellable) is the context row.
	newPlugin := func(timeoutMs uint64) (*extism.Plugin, error) {
		return extism.NewPlugin(ctx, extism.Manifest{
			Wasm:    []extism.Wasm{extism.WasmData{Data: ext, Name: "sha256"}},
			Timeout: timeoutMs,
		}, extism.PluginConfig{EnableWasi: true}, nil)
	}
	p, err := newPlugin(30_000)
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	pNoTimeout, err := newPlugin(0)
	if err != nil {
		s.Close()
		p.Close(ctx)
		return nil, nil, nil, err
	}
	cleanup := func() { s.Close(); p.Close(ctx); pNoTimeout.Close(ctx) }
	extCall := func(p *extism.Plugin, args string) func(int) error {
		in := []byte(args)
		return func(int) error {
			rc, out, err := p.Call("sha256", in)
			if err != nil {
				return err
			}
			if rc != 0 || !bytes.Contains(out, []byte(`"sha256":"`)) {
				return fmt.Errorf("extism plugin: rc %d, output %.80q", rc, out)
			}
			return nil
		}
	}
	// The two must agree before they are timed.
	want, err := s.Call(ctx, "sha256", json.RawMessage(args16B), nil)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	_, got, err := p.Call("sha256", []byte(args16B))
	if err != nil || !bytes.Contains(got, want.StructuredContent) {
		cleanup()
		return nil, nil, nil, fmt.Errorf("extism plugin answers %q (%v), wasmtask %s", got, err, want.StructuredContent)
	}
	sides := []side{
		{name: "wasmtask-16B", clients: 1, op: serverCall(s, "sha256", args16B)},
		{name: "extism-16B", clients: 1, op: extCall(p, args16B)},
		{name: "extism-no-timeout-16B", clients: 1, op: extCall(pNoTimeout, args16B)},
		{name: "wasmtask-1KiB", clients: 1, op: serverCall(s, "sha256", args1KiB)},
		{name: "extism-1KiB", clients: 1, op: extCall(p, args1KiB)},
		{name: "extism-no-timeout-1KiB", clients: 1, op: extCall(pNoTimeout, args1KiB)},
	}
	rows := []row{
		{"2", "fresh instance vs Extism reused instance, sha256, 16 B", "wasmtask-16B", "extism-16B", "≤ 1.00"},
		{"2", "fresh instance vs Extism reused instance, sha256, 1 KiB", "wasmtask-1KiB", "extism-1KiB", "≤ 0.60"},
		{"2", "(context) the same, Extism without timeout (not cancellable), 16 B", "wasmtask-16B", "extism-no-timeout-16B", ""},
		{"2", "(context) the same, Extism without timeout (not cancellable), 1 KiB", "wasmtask-1KiB", "extism-no-timeout-1KiB", ""},
	}
	return sides, rows, cleanup, nil
}

// figGoNaive is figure 3: the Go-built word_count, a fresh instance per
// call, against the naive wazero host: default runtime and module
// configuration, compiled once, instantiated per call.
func figGoNaive(ctx context.Context, plugins string) ([]side, []row, func(), error) {
	demo, err := defaulttools.FS.ReadFile("demo.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	preinit, err := readPlugin(plugins, "demo-preinit.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := newServer(ctx, map[string][]byte{"demo": demo}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	ps, err := newServer(ctx, map[string][]byte{"demo": preinit}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	rt, err := rawRuntime(ctx, wazero.NewRuntimeConfig())
	if err != nil {
		s.Close()
		ps.Close()
		return nil, nil, nil, err
	}
	cleanup := func() { s.Close(); ps.Close(); rt.Close(ctx) }
	compiled, err := rt.CompileModule(ctx, demo)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	sides := []side{
		{name: "wasmtask", clients: 1, op: serverCall(s, "word_count", wordCountArgs)},
		{name: "wasmtask-preinit", clients: 1, op: serverCall(ps, "word_count", wordCountArgs)},
		{name: "wazero-naive", clients: 1, op: rawCall(rt, compiled, "word_count", wordCountArgs, false)},
	}
	rows := []row{
		{"3", "Go word_count, fresh instance: wasmtask vs naive wazero", "wasmtask", "wazero-naive", ""},
		{"3", "Go word_count pre-initialised (opt-in build), fresh instance: wasmtask vs naive wazero", "wasmtask-preinit", "wazero-naive", "wasmtask ≤ 1 ms"},
	}
	return sides, rows, cleanup, nil
}

// spinN and fillN are the loop counts of figure 7: tens of milliseconds of
// guest work, so instantiation is noise beside it.
const (
	spinN = 10_000_000
	fillN = 1_000 // memsets of 1 MiB
)

// figSpin is figure 7: a CPU-bound guest loop with wazero's
// close-on-context-done (what makes a guest cancellable) on and off, and
// the same loop as a wasmtask tool; each against the uncancellable loop.
func figSpin(ctx context.Context, plugins string) ([]side, []row, func(), error) {
	spin, err := readPlugin(plugins, "spin.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	tool, err := readPlugin(plugins, "benchtool.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := newServer(ctx, map[string][]byte{"benchtool": tool}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	var closers []func()
	cleanup := func() {
		s.Close()
		for _, c := range closers {
			c()
		}
	}
	rawSpin := func(fn string, n int, cancellable bool) (func(int) error, error) {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(cancellable))
		closers = append(closers, func() { rt.Close(ctx) })
		compiled, err := rt.CompileModule(ctx, spin)
		if err != nil {
			return nil, err
		}
		return func(int) error {
			mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				return err
			}
			defer mod.Close(ctx)
			_, err = mod.ExportedFunction(fn).Call(ctx, uint64(n))
			return err
		}, nil
	}
	off, err := rawSpin("spin", spinN, false)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	on, err := rawSpin("spin", spinN, true)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	fillOff, err := rawSpin("fill", fillN, false)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	sides := []side{
		{name: "uncancellable", clients: 1, op: off},
		{name: "cancellable", clients: 1, op: on},
		{name: "wasmtask", clients: 1, op: serverCall(s, "spin", fmt.Sprintf(`{"n":%d}`, spinN))},
		{name: "fill-uncancellable", clients: 1, op: fillOff},
		{name: "wasmtask-fill", clients: 1, op: serverCall(s, "fill", fmt.Sprintf(`{"n":%d}`, fillN))},
	}
	rows := []row{
		{"7", "CPU-bound loop: wazero close-on-context-done vs off", "cancellable", "uncancellable", ""},
		{"7", "CPU-bound loop: wasmtask spin tool vs uncancellable wazero", "wasmtask", "uncancellable", "≤ 1.10"},
		{"7", "bulk-memory loop (memory.fill of 1 MiB): wasmtask fill tool vs uncancellable wazero", "wasmtask-fill", "fill-uncancellable", "≤ 1.10"},
	}
	return sides, rows, cleanup, nil
}
