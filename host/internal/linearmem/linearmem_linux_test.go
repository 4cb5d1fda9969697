package linearmem

import (
	"slices"
	"testing"
)

// TestLinearMemoryReuseIsZero: a mapping kept for reuse comes back with
// every byte the previous guest could write cleared, including pages the
// next guest reaches only by growing.
func TestLinearMemoryReuseIsZero(t *testing.T) {
	cache := NewCache()
	defer cache.Close()
	first := New(8<<20, cache)
	buf, _, ok := first.Grow(3<<20, 8<<20)
	if !ok {
		t.Fatal("first grow refused")
	}
	for i := range buf {
		buf[i] = 0xA5
	}
	mem := &buf[0]
	first.Release()

	second := New(8<<20, cache)
	defer second.Release()
	small, _, ok := second.Grow(1<<20, 8<<20)
	if !ok || &small[0] != mem {
		t.Fatalf("second grow: ok=%v, reused=%v; want the released mapping again", ok, ok && &small[0] == mem)
	}
	big, _, ok := second.Grow(8<<20, 8<<20)
	if !ok {
		t.Fatal("growing the reused mapping refused")
	}
	if i := slices.IndexFunc(big, func(b byte) bool { return b != 0 }); i >= 0 {
		t.Errorf("reused memory holds the previous guest's byte at %d", i)
	}
}

// TestLinearCacheBounded: idle mappings stay within maxIdleMappings and
// maxIdleLinearBytes; the rest are unmapped.
func TestLinearCacheBounded(t *testing.T) {
	cache := NewCache()
	defer cache.Close()
	var live []Backing
	for range maxIdleMappings + 4 {
		b := New(16<<20, cache)
		if _, _, ok := b.Grow(8<<20, 16<<20); !ok {
			t.Fatal("grow refused")
		}
		live = append(live, b)
	}
	for _, b := range live {
		b.Release()
	}
	if cache.count > maxIdleMappings || cache.idleBytes > maxIdleLinearBytes {
		t.Errorf("idle: %d mappings holding %d bytes, want at most %d and %d", cache.count, cache.idleBytes, maxIdleMappings, maxIdleLinearBytes)
	}
}
