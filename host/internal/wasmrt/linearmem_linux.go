package wasmrt

import (
	"os"
	"syscall"
)

// mappedMemory backs linear memory with an anonymous mapping of the whole
// pool, reserved without access (it costs address space, not memory) and
// opened page by page as the guest grows: growth never copies, and the
// host holds no more than the pages the guest has touched. Untouched pages
// read as zero. The mapping is unmapped by release, once the guest has
// stopped: nothing may keep a slice of guest memory past its call.
type mappedMemory struct {
	pool      uint64
	mem       []byte // the reservation
	committed uint64 // bytes opened for reading and writing
}

func newLinearBacking(pool uint64) linearBacking { return &mappedMemory{pool: pool} }

func (m *mappedMemory) grow(size, _ uint64) ([]byte, uint64, bool) {
	page := uint64(os.Getpagesize())
	if m.mem == nil {
		reserve := roundUp(max(m.pool, size, 1), page)
		b, err := syscall.Mmap(-1, 0, int(reserve), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err != nil {
			return nil, 0, false
		}
		m.mem = b
	}
	if size > uint64(len(m.mem)) {
		return nil, 0, false
	}
	if end := roundUp(size, page); end > m.committed {
		if err := syscall.Mprotect(m.mem[m.committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil, 0, false
		}
		m.committed = end
	}
	return m.mem[:size:size], size, true
}

func (m *mappedMemory) release() {
	if m.mem != nil {
		_ = syscall.Munmap(m.mem)
		m.mem = nil
	}
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }
