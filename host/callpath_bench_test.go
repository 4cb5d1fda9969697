package host_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/defaulttools"
)

// BenchmarkCallPath compares one call through the server's call path
// (Server.Call: catalog, admission, argument validation, a fresh instance,
// result decoding) with the bare wazero work it wraps (instantiate with the
// request on stdin, run _start, collect stdout), on the same module and
// input, with the same runtime settings (close on context done). The ratio
// of the two is the host's overhead:
//
//	go test -run '^$' -bench CallPath -count 10 ./host/ | tee /tmp/b.txt
//	benchstat -col /path /tmp/b.txt
func BenchmarkCallPath(b *testing.B) {
	ctx := context.Background()
	for _, bm := range []struct {
		name, module, tool, args string
	}{
		{"c-16B", "sha256", "sha256", `{"text":"0123456789"}`}, // 16 B of arguments
		{"c-1KiB", "sha256", "sha256", `{"text":"` + strings.Repeat("x", 1013) + `"}`},
		{"wat", "add", "add", `{"a":1,"b":2}`},
	} {
		wasm, err := defaulttools.FS.ReadFile(bm.module + ".wasm")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bm.name+"/path=server", func(b *testing.B) {
			s, err := host.New(ctx, host.Config{ToolsFS: fstest.MapFS{bm.module + ".wasm": {Data: wasm}}, CacheDir: host.CompileCacheDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			args := json.RawMessage(bm.args)
			for b.Loop() {
				if _, err := s.Call(ctx, bm.tool, args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bm.name+"/path=wazero", func(b *testing.B) {
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
			defer rt.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, rt)
			// The modules may import the host functions; no-ops stand in.
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
				b.Fatal(err)
			}
			compiled, err := rt.CompileModule(ctx, wasm)
			if err != nil {
				b.Fatal(err)
			}
			req, _ := json.Marshal(abi.Request{ABI: abi.Version, Method: abi.MethodCall, Tool: bm.tool, Arguments: json.RawMessage(bm.args)})
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				cfg := wazero.NewModuleConfig().WithName("").WithRandSource(rand.Reader).
					WithStdin(bytes.NewReader(req)).WithStdout(&out)
				mod, err := rt.InstantiateModule(ctx, compiled, cfg)
				if err != nil {
					b.Fatal(err)
				}
				mod.Close(ctx)
				if out.Len() == 0 {
					b.Fatal("no output")
				}
			}
		})
	}
}
