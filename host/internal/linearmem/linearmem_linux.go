package linearmem

import (
	"math/bits"
	"os"
	"sync"
	"syscall"
)

// mappedMemory backs linear memory with an anonymous mapping of the whole
// pool, reserved without access (it costs address space, not memory) and
// opened as the guest grows: growth never copies, and the host holds no
// more than the pages the guest touches. The mapping is released once the
// guest has stopped: nothing may keep a slice of guest memory past its
// call. Released mappings are cleared and kept for reuse (Cache):
// the kernel's first touch of a page costs more than clearing it (about
// 1.7 µs against 0.1 µs a 4 KiB page on the machines measured).
type mappedMemory struct {
	cache *Cache
	pool  uint64
	m     *mapping
}

// mapping is one reservation. Bytes [0, committed) may be read and
// written; all of them are zero when the mapping is idle.
type mapping struct {
	mem       []byte
	committed uint64
	used      uint64 // the most this use exposed to the guest
	resident  uint64 // the most any use exposed: pages that may stay resident
}

func New(pool uint64, cache *Cache) Backing {
	return &mappedMemory{cache: cache, pool: pool}
}

func (b *mappedMemory) Grow(size, _ uint64) ([]byte, uint64, bool) {
	page := uint64(os.Getpagesize())
	m := b.m
	if m == nil {
		m = b.cache.get(max(b.pool, size))
		if m == nil {
			return nil, 0, false
		}
		b.m = m
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
	m.used = max(m.used, size)
	return m.mem[:size:size], size, true
}

func (b *mappedMemory) Release() {
	if b.m != nil {
		b.cache.put(b.m)
		b.m = nil
	}
}

// Bounds of the mappings kept for reuse.
const (
	// maxIdleLinearBytes bounds the memory the idle mappings may keep
	// resident, all zero.
	maxIdleLinearBytes = 64 << 20
	// maxIdleMappings bounds how many are kept.
	maxIdleMappings = 16
)

// Cache keeps cleared mappings for reuse, by reservation size (the
// pool rounded up to a power of two). It is safe for concurrent use; its
// owner, the Runtime, closes it.
type Cache struct {
	mu        sync.Mutex
	idle      map[uint64][]*mapping
	count     int
	idleBytes uint64 // resident bytes of the idle mappings
	closed    bool
}

func NewCache() *Cache { return &Cache{idle: make(map[uint64][]*mapping)} }

// reservation is the size of the mapping that holds a pool of n bytes.
func reservation(n uint64) uint64 {
	n = max(n, 1<<20)
	return 1 << (64 - bits.LeadingZeros64(n-1))
}

// get returns a mapping of at least size bytes, reused or new;
// nil when the system refuses one.
func (c *Cache) get(size uint64) *mapping {
	size = reservation(size)
	c.mu.Lock()
	if list := c.idle[size]; len(list) > 0 {
		m := list[len(list)-1]
		c.idle[size] = list[:len(list)-1]
		c.count--
		c.idleBytes -= m.resident
		c.mu.Unlock()
		return m
	}
	c.mu.Unlock()
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return &mapping{mem: b}
}

// put clears what the guest could have written and keeps the mapping, or
// unmaps it when the cache is full or closed.
func (c *Cache) put(m *mapping) {
	clear(m.mem[:m.used])
	m.resident = max(m.resident, m.used)
	m.used = 0
	size := uint64(len(m.mem))
	c.mu.Lock()
	if !c.closed && c.count < maxIdleMappings && c.idleBytes+m.resident <= maxIdleLinearBytes {
		c.idle[size] = append(c.idle[size], m)
		c.count++
		c.idleBytes += m.resident
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	_ = syscall.Munmap(m.mem)
}

// Close unmaps the idle mappings; mappings in use are unmapped when their
// call releases them.
func (c *Cache) Close() {
	c.mu.Lock()
	idle := c.idle
	c.idle, c.count, c.idleBytes, c.closed = nil, 0, 0, true
	c.mu.Unlock()
	for _, list := range idle {
		for _, m := range list {
			_ = syscall.Munmap(m.mem)
		}
	}
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }
