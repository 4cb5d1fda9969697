package wasmcode

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// testSeg is a data segment as the tests write and read them.
type testSeg struct {
	passive bool
	off     int64
	init    []byte
}

func encodeData(segs []testSeg) []byte {
	out := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		if s.passive {
			out = append(out, 0x01)
		} else {
			out = append(out, 0x00, 0x41)
			out = appendSleb(out, s.off)
			out = append(out, 0x0b)
		}
		out = binary.AppendUvarint(out, uint64(len(s.init)))
		out = append(out, s.init...)
	}
	return out
}

func decodeData(t testing.TB, p []byte) []testSeg {
	t.Helper()
	r := reader{b: p}
	n := r.u32()
	var segs []testSeg
	for i := uint32(0); i < n && r.err == nil; i++ {
		var s testSeg
		switch flags := r.u32(); flags {
		case 0, 2:
			if flags == 2 && r.u32() != 0 {
				t.Fatalf("segment %d: memory is not 0", i)
			}
			if r.byte() != 0x41 {
				t.Fatalf("segment %d: offset is not i32.const", i)
			}
			s.off = int64(int32(r.s33()))
			r.byte()
		case 1:
			s.passive = true
		default:
			t.Fatalf("segment %d: flags %d", i, flags)
		}
		s.init = r.bytes(int(r.u32()))
		segs = append(segs, s)
	}
	if r.err != nil || len(r.b) != 0 {
		t.Fatalf("malformed data section: %v", r.err)
	}
	return segs
}

// applyData is what instantiation leaves in a zero memory of size bytes,
// or ok false when a segment does not fit.
func applyData(segs []testSeg, size int) (mem []byte, ok bool) {
	mem = make([]byte, size)
	for _, s := range segs {
		if s.passive {
			continue
		}
		off := uint64(uint32(s.off))
		if off+uint64(len(s.init)) > uint64(size) {
			return nil, false
		}
		copy(mem[off:], s.init)
	}
	return mem, true
}

// TestMergeDataSameMemory: on random sections (overlaps, empty segments,
// gaps of all sizes, offsets past the memory), the merged section leaves
// the memory the original leaves, fails where it fails, keeps the passive
// segments in order, and writes fewer segments.
func TestMergeDataSameMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const memSize = 1 << 16
	for iter := range 2000 {
		var segs []testSeg
		pos := int64(rng.IntN(512))
		for range 1 + rng.IntN(40) {
			switch rng.IntN(10) {
			case 0:
				segs = append(segs, testSeg{passive: true, init: []byte{byte(iter), 1, 2}})
				continue
			case 1: // anywhere, overlaps likely
				pos = int64(rng.IntN(memSize))
			case 2: // past the end, or negative
				pos = memSize - 2 + int64(rng.IntN(4))
				if rng.IntN(2) == 0 {
					pos = -int64(1 + rng.IntN(100))
				}
			default:
				pos += int64(rng.IntN(2 * maxDataGap))
			}
			init := make([]byte, rng.IntN(64))
			for i := range init {
				init[i] = byte(1 + rng.IntN(255))
			}
			segs = append(segs, testSeg{off: pos, init: init})
			pos += int64(len(init))
		}
		for _, keep := range []bool{false, true} {
			in := encodeData(segs)
			out, ok := mergeData(in, keep)
			if !ok {
				t.Fatalf("iteration %d: mergeData refused a valid section", iter)
			}
			got := decodeData(t, out)
			wantMem, wantOK := applyData(segs, memSize)
			gotMem, gotOK := applyData(got, memSize)
			if gotOK != wantOK || !bytes.Equal(gotMem, wantMem) {
				t.Fatalf("iteration %d (keep %v): merged memory differs (fits: got %v, want %v)", iter, keep, gotOK, wantOK)
			}
			if keep && len(got) != len(segs) {
				t.Fatalf("iteration %d: %d segments, want the original %d", iter, len(got), len(segs))
			}
			var wantPassive, gotPassive [][]byte
			for i, s := range segs {
				if s.passive {
					wantPassive = append(wantPassive, s.init)
					if keep && !got[i].passive {
						t.Fatalf("iteration %d: passive segment %d moved", iter, i)
					}
				}
			}
			active := 0
			for _, s := range got {
				if s.passive && len(s.init) > 0 {
					gotPassive = append(gotPassive, s.init)
				} else if !s.passive {
					active++
				}
			}
			if len(gotPassive) != len(wantPassive) {
				t.Fatalf("iteration %d: %d passive segments, want %d", iter, len(gotPassive), len(wantPassive))
			}
			if active > len(segs)-len(wantPassive) {
				t.Fatalf("iteration %d: %d active segments, more than the original", iter, active)
			}
		}
	}
}

// TestMergeDataBounds: zeros are written only across short gaps, in all at
// most the section's own data, and runs stop taking gaps past
// maxMergedSegment.
func TestMergeDataBounds(t *testing.T) {
	one := []byte{1}
	tests := []struct {
		name string
		segs []testSeg
		want int // active segments after the merge
	}{
		{"adjacent", []testSeg{{off: 0, init: one}, {off: 1, init: one}}, 1},
		{"short gap", []testSeg{{off: 0, init: make([]byte, 2000)}, {off: 2000 + maxDataGap, init: one}}, 1},
		{"long gap", []testSeg{{off: 0, init: make([]byte, 2000)}, {off: 2001 + maxDataGap, init: one}}, 2},
		{"gap over budget", []testSeg{{off: 0, init: one}, {off: 500, init: one}}, 2},
		{"run full", []testSeg{{off: 0, init: make([]byte, maxMergedSegment)}, {off: maxMergedSegment + 1, init: one}}, 2},
	}
	for _, tc := range tests {
		out, ok := mergeData(encodeData(tc.segs), false)
		if !ok {
			t.Fatalf("%s: refused", tc.name)
		}
		if got := len(decodeData(t, out)); got != tc.want {
			t.Errorf("%s: %d segments, want %d", tc.name, got, tc.want)
		}
	}
}

// TestMergeDataRefuses: sections the rewrite cannot reason about are left
// as they are.
func TestMergeDataRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"global offset", []byte{1, 0x00, 0x23, 0x00, 0x0b, 1, 'a'}},
		{"memory 1", []byte{1, 0x02, 0x01, 0x41, 0x00, 0x0b, 1, 'a'}},
		{"truncated", []byte{1, 0x00, 0x41, 0x00, 0x0b, 5, 'a'}},
		{"trailing", []byte{0, 0}},
		{"bad flags", []byte{1, 0x03}},
	} {
		out, ok := mergeData(tc.payload, false)
		if ok || !bytes.Equal(out, tc.payload) {
			t.Errorf("%s: got ok=%v, want the section unchanged", tc.name, ok)
		}
	}
}

// FuzzMergeData: any payload is either left alone or merged into one that
// leaves the same memory.
func FuzzMergeData(f *testing.F) {
	f.Add(encodeData([]testSeg{{off: 0, init: []byte("ab")}, {off: 3, init: []byte("c")}, {passive: true, init: []byte("p")}}), false)
	f.Add(encodeData([]testSeg{{off: -1, init: []byte("ab")}, {off: 10, init: nil}}), true)
	f.Fuzz(func(t *testing.T, payload []byte, keep bool) {
		out, ok := mergeData(payload, keep)
		if !ok {
			return
		}
		const memSize = 1 << 12
		want, wantOK := applyData(decodeData(t, payload), memSize)
		got, gotOK := applyData(decodeData(t, out), memSize)
		if gotOK != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("merged memory differs (fits: got %v, want %v)", gotOK, wantOK)
		}
	})
}
