//go:build !linux

package linearmem

// heapMemory backs linear memory with a Go byte slice that grows
// geometrically (doubling, within what the pool allows) to keep
// memory.grow loops linear. A growth copies the memory while the old
// slice is still held, and the capacity, not the guest's size, is charged
// to the pool: elsewhere than on Linux the bound is looser (see
// mappedMemory).
type heapMemory struct{ buf []byte }

func New(uint64, *Cache) Backing { return &heapMemory{} }

// Cache keeps nothing elsewhere than on Linux.
type Cache struct{}

func NewCache() *Cache { return &Cache{} }

func (*Cache) Close() {}

func (h *heapMemory) Grow(size, avail uint64) ([]byte, uint64, bool) {
	if size <= uint64(cap(h.buf)) {
		h.buf = h.buf[:size]
		return h.buf, uint64(cap(h.buf)), true
	}
	newCap := size
	if cap(h.buf) > 0 {
		newCap = max(size, min(2*uint64(cap(h.buf)), avail))
	}
	nb := make([]byte, size, newCap)
	copy(nb, h.buf)
	h.buf = nb
	return nb, newCap, true
}

func (h *heapMemory) Release() { h.buf = nil }
