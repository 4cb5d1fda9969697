package wasmcode

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// snapshotPatterns are memories of the shapes that cost a snapshot most.
func snapshotPatterns() map[string][]byte {
	const pages = 16
	fill := func(f func(i int) byte) []byte {
		b := make([]byte, pages*PageSize)
		for i := range b {
			b[i] = f(i)
		}
		return b
	}
	rng := rand.New(rand.NewPCG(1, 2))
	return map[string][]byte{
		"zero":             make([]byte, pages*PageSize),
		"one byte":         fill(func(i int) byte { return byte(i / (pages*PageSize - 1)) }),
		"dense":            fill(func(int) byte { return byte(rng.IntN(255) + 1) }),
		"random":           fill(func(int) byte { return byte(rng.IntN(256)) }),
		"alternating":      fill(func(i int) byte { return byte(i & 1) }),
		"every 1 KiB":      fill(func(i int) byte { return b2(i%1024 == 0) }),
		"every 1032 bytes": fill(func(i int) byte { return b2(i%1032 == 0) }), // gaps just over maxDataGap
		"every 4 KiB":      fill(func(i int) byte { return b2(i%4096 == 7) }),
		"every 16 KiB":     fill(func(i int) byte { return b2(i%16384 == 9) }),
	}
}

func b2(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// TestSnapshotEncodingBounded: a snapshot's data section writes exactly the
// memory it was taken from, takes no more than a plain copy of it plus one
// segment header, and has at most snapshotRunsPerPage segments per page,
// whatever the memory holds.
func TestSnapshotEncodingBounded(t *testing.T) {
	for name, mem := range snapshotPatterns() {
		segs, err := checkSnapshotData(mem)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %d segments for %d pages", name, segs, len(mem)/PageSize)
	}
}

// checkSnapshotData encodes mem and checks the encoding's bounds and that
// it writes mem; it returns the number of segments.
func checkSnapshotData(mem []byte) (int, error) {
	size := SnapshotDataSize(mem)
	data := appendSnapshotData(nil, mem)
	switch {
	case uint64(len(data)) != size:
		return 0, errors.New("SnapshotDataSize differs from the encoding's length")
	case len(data) > len(mem)+18:
		return 0, errors.New("the encoding is larger than a plain copy of the memory and one header")
	}
	// Apply the segments to a zero memory, as instantiation does.
	got := make([]byte, len(mem))
	r := reader{b: data}
	n := r.u32()
	if int(n) > snapshotRunsPerPage*(len(mem)/PageSize)+1 {
		return 0, errors.New("more segments than snapshotRunsPerPage per page")
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		if r.byte() != 0 || r.byte() != 0x41 {
			return 0, errors.New("not an active segment at an i32.const")
		}
		off := int(uint32(int32(r.s33())))
		r.byte()
		init := r.bytes(int(r.u32()))
		if r.err != nil || off+len(init) > len(got) {
			return 0, errors.New("segment out of range")
		}
		copy(got[off:], init)
	}
	if r.err != nil || len(r.b) != 0 {
		return 0, errors.New("malformed data section")
	}
	if !bytes.Equal(got, mem) {
		return 0, errors.New("the segments do not write the memory they were taken from")
	}
	return int(n), nil
}

// FuzzSnapshotData: guest memory is untrusted; its encoding must hold
// whatever it holds. The input is tiled over two pages.
func FuzzSnapshotData(f *testing.F) {
	f.Add([]byte{1, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(append(make([]byte, 1030), 1))
	f.Fuzz(func(t *testing.T, pattern []byte) {
		if len(pattern) == 0 {
			return
		}
		mem := make([]byte, 2*PageSize)
		for i := range mem {
			mem[i] = pattern[i%len(pattern)]
		}
		if _, err := checkSnapshotData(mem); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSnapshotDataSection: a snapshot's data section writes the memory
// _initialize left, whether or not the module had a data section, and
// replaces the one it had.
func TestSnapshotDataSection(t *testing.T) {
	for _, src := range []string{
		`(module (memory (export "memory") 1) (func (export "_initialize")) (func (export "_start")))`,
		`(module (memory (export "memory") 1) (data (i32.const 8) "x") (func (export "_initialize")) (func (export "_start")))`,
	} {
		wasm := watModule(t, src)
		_, pm, err := ExposeGlobals(wasm)
		if err != nil {
			t.Fatal(err)
		}
		mem := make([]byte, 2*PageSize)
		mem[70000] = 'A'
		snap, err := pm.Rewrite(wasm, &Snapshot{Mem: mem, DataSize: SnapshotDataSize(mem)})
		if err != nil {
			t.Fatal(err)
		}
		var data [][]byte
		eachSection(snap, func(id byte, p []byte) []byte {
			if id == secData {
				data = append(data, p)
			}
			return p
		})
		if len(data) != 1 || !bytes.Equal(data[0], appendSnapshotData(nil, mem)) {
			t.Errorf("%s: snapshot's data sections %x, want one, the memory's", src, data)
		}
	}
}

// watModule compiles a WAT source with the test fixture builder.
func watModule(tb testing.TB, src string) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "m.wat")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		tb.Fatal(err)
	}
	return hosttest.Wasm(tb, path)
}
