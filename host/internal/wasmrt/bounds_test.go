package wasmrt

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// Tables and locals live on the host's side of the linear-memory limit, so
// the host bounds them at load.
func TestTableAndLocalBounds(t *testing.T) {
	ctx := context.Background()
	for _, interp := range []bool{false, true} {
		r := newRuntime(t, Config{Interpreter: interp})

		m, err := r.Load(ctx, "tablegrow", wasmFile(t, "tablegrow"), loadLimits)
		if err != nil {
			t.Fatalf("interpreter=%v: Load tablegrow: %v", interp, err)
		}
		res, err := m.Call(ctx, "grow", nil, testLimits, nil)
		if err != nil || len(res.Content) != 1 || res.Content[0].Text != "bounded" {
			t.Errorf("interpreter=%v: table.grow past initial+65536: got %v, %v; want the tool to see -1 and answer bounded", interp, res, err)
		}
		m.Close(ctx)

		_, err = r.Load(ctx, "bigtable", wasmFile(t, "bigtable"), loadLimits)
		if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "tables start with more than 262144 entries") {
			t.Errorf("interpreter=%v: Load of a 2^27-entry table: got %v, want ErrCompile naming the table bound", interp, err)
		}

		_, err = r.Load(ctx, "manylocals", manyLocalsModule(wasmcode.MaxLocals+1), loadLimits)
		if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "declares more than 10000 locals") {
			t.Errorf("interpreter=%v: Load of a function with %d locals: got %v, want ErrCompile naming the locals bound", interp, wasmcode.MaxLocals+1, err)
		}
	}
}

// manyLocalsModule is a WASI command whose _start declares n i64 locals (in
// one group, so the module stays a few bytes) and calls proc_exit(0).
func manyLocalsModule(n uint64) []byte {
	section := func(id byte, payload ...byte) []byte {
		return append(binary.AppendUvarint([]byte{id}, uint64(len(payload))), payload...)
	}
	body := binary.AppendUvarint([]byte{1}, n)        // one local group of n…
	body = append(body, 0x7e)                         // …i64
	body = append(body, 0x41, 0x00, 0x10, 0x00, 0x0b) // i32.const 0; call 0; end
	code := append([]byte{1}, binary.AppendUvarint(nil, uint64(len(body)))...)
	code = append(code, body...)
	imp := []byte("wasi_snapshot_preview1")
	name := []byte("proc_exit")
	imports := append([]byte{1, byte(len(imp))}, imp...)
	imports = append(imports, byte(len(name)))
	imports = append(imports, name...)
	imports = append(imports, 0x00, 0x00) // func, type 0
	exports := []byte{2, 6, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, 6, '_', 's', 't', 'a', 'r', 't', 0x00, 0x01}
	wasm := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	wasm = append(wasm, section(1, 2, 0x60, 1, 0x7f, 0, 0x60, 0, 0)...) // types: (i32)->(), ()->()
	wasm = append(wasm, section(2, imports...)...)
	wasm = append(wasm, section(3, 1, 1)...)       // one function of type 1
	wasm = append(wasm, section(5, 1, 0x00, 1)...) // memory min 1
	wasm = append(wasm, section(7, exports...)...)
	wasm = append(wasm, section(10, code...)...)
	return wasm
}

func TestSymlinkStaysInside(t *testing.T) {
	for _, tc := range []struct {
		target, link string
		want         bool
	}{
		{"file", "link", true},
		{"sub/file", "link", true},
		{"../file", "sub/link", true},
		{"./x/../y", "link", true},
		{"/etc/passwd", "link", false},
		{"../outside", "link", false},
		{"../../outside", "sub/link", false},
		{"x/../../outside", "link", false},
		{"..", "link", false},
		{"", "link", false},
	} {
		if got := symlinkStaysInside(tc.target, tc.link); got != tc.want {
			t.Errorf("symlinkStaysInside(%q, %q) = %v, want %v", tc.target, tc.link, got, tc.want)
		}
	}
}
