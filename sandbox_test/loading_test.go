package sandbox_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// codeModule is a module of n functions whose bodies are each size bytes
// of nop, with a _start that calls nothing: refused for its size before it
// is compiled, or compiled and refused for the ABI otherwise.
func codeModule(n, size int) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	section := func(id byte, payload []byte) {
		m = append(m, id)
		m = binary.AppendUvarint(m, uint64(len(payload)))
		m = append(m, payload...)
	}
	section(1, []byte{1, 0x60, 0, 0}) // type 0: () -> ()
	funcs := binary.AppendUvarint(nil, uint64(n))
	for range n {
		funcs = append(funcs, 0)
	}
	section(3, funcs)
	section(7, append([]byte{1, 6}, append([]byte("_start"), 0, 0)...)) // export func 0
	body := append([]byte{0}, make([]byte, size-2)...)                  // no locals, then nops
	for i := 1; i < len(body); i++ {
		body[i] = 0x01
	}
	body = append(body, 0x0b)
	code := binary.AppendUvarint(nil, uint64(n))
	for range n {
		code = binary.AppendUvarint(code, uint64(len(body)))
		code = append(code, body...)
	}
	section(10, code)
	return m
}

// TestLoadingIsBounded: modules that are slow or huge to load become
// problems of their own files, with the cause, while a good module is
// served as soon as it has loaded: code over the operator's maxCodeMiB and
// a function body over 1 MiB are refused before they are compiled, and a
// describe that never answers ends at the load limits.
func TestLoadingIsBounded(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		fsys := fstest.MapFS{
			"normal.wasm":       {Data: wasm(t, "normal")},
			"slowdescribe.wasm": {Data: wasm(t, "slowdescribe")},
			"bulkdescribe.wasm": {Data: wasm(t, "bulkdescribe")},
			"hugecode.wasm":     {Data: codeModule(3, 600<<10)}, // 1.8 MiB of code in bodies under 1 MiB
			"hugefunc.wasm":     {Data: codeModule(1, 1<<20+16)},
		}
		watchBaseline(t)
		start := time.Now()
		// Every bad module is named in the policy: once one has hit a load
		// limit, Problems waits only for the modules the policy names.
		named := map[string]host.ModulePolicy{"slowdescribe": {}, "bulkdescribe": {}, "hugecode": {}, "hugefunc": {}}
		s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Interpreter: e.interpreter,
			Policy: &host.Policy{Defaults: short(), MaxCodeMiB: 1, Modules: named}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stillServes(t, s) // waits only for normal to load
		served := time.Since(start)
		ps := problemsText(s) // waits for every named load
		all := time.Since(start)
		for _, want := range []string{
			"hugecode.wasm: module failed to load: load \"hugecode\": code section: function 1: module too large to load: with it the module's compile may cost as much as",
			"more than the limit of 1 MiB",
			"hugefunc.wasm: module failed to load: load \"hugefunc\": code section: function 0: module too large to load: its body is 1048592 bytes, more than 1048576",
			"slowdescribe.wasm: module failed to load: load \"slowdescribe\": describe failed",
			"bulkdescribe.wasm: module failed to load: load \"bulkdescribe\": describe failed",
		} {
			if !strings.Contains(ps, want) {
				t.Errorf("problems lack %q:\n%s", want, ps)
			}
		}
		stillServes(t, s)
		t.Logf("normal served after %v; every load ended after %v", served.Round(time.Millisecond), all.Round(time.Millisecond))
	})
}

// TestLoadTimeout: a load that passes the operator's loadTimeout is a
// problem that says so; the server keeps running.
func TestLoadTimeout(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		fsys := fstest.MapFS{"normal.wasm": {Data: wasm(t, "normal")}}
		watchBaseline(t)
		s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Interpreter: e.interpreter,
			Policy: &host.Policy{LoadTimeout: 1}}) // 1ns: past before the compiler starts
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		want := "normal.wasm: module failed to load: module took too long to load: more than 1ns (the operator's load timeout)"
		if ps := problemsText(s); !strings.Contains(ps, want) {
			t.Errorf("problems:\n%s\nwant %q", ps, want)
		}
		if len(s.Tools()) != 0 {
			t.Errorf("tools served: %v", s.Tools())
		}
	})
}

// denseModule is codeModule with bodies of local arithmetic instead of
// nops (local.get 0, i32.const 1, i32.add, local.set 0), which the
// compilers cannot drop: about the most compile work per byte.
func denseModule(n, size int) []byte {
	m := codeModule(n, 16) // sections before the code; replaced below
	m = m[:len(m)-codeSectionLen(n, 16)]
	body := []byte{1, 1, 0x7f} // one i32 local
	for len(body)+7 < size {
		body = append(body, 0x20, 0, 0x41, 1, 0x6a, 0x21, 0)
	}
	body = append(body, 0x0b)
	code := binary.AppendUvarint(nil, uint64(n))
	for range n {
		code = binary.AppendUvarint(code, uint64(len(body)))
		code = append(code, body...)
	}
	m = append(m, 10)
	m = binary.AppendUvarint(m, uint64(len(code)))
	return append(m, code...)
}

// codeSectionLen is the length of codeModule(n, size)'s code section,
// which ends the module.
func codeSectionLen(n, size int) int {
	payload := len(binary.AppendUvarint(nil, uint64(n))) + n*(len(binary.AppendUvarint(nil, uint64(size)))+size)
	return 1 + len(binary.AppendUvarint(nil, uint64(payload))) + payload
}
