package resultcache

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// Key is what a cached result may depend on. Two calls with equal keys
// must be able to share a result; anything that could make their results
// differ belongs in the key.
type Key struct {
	Tenant string // who called: results never cross tenants
	Digest string // the module's content digest: a new version never hits an old result
	Tool   string
	Args   []byte // Canonical arguments
	Grants string // a fingerprint of the grants the call receives (environment, mounts)
}

// id is a Key as a map key: a hash of its length-prefixed fields.
type id [sha256.Size]byte

func (k Key) id() id {
	h := sha256.New()
	var n [8]byte
	for _, f := range [][]byte{[]byte(k.Tenant), []byte(k.Digest), []byte(k.Tool), k.Args, []byte(k.Grants)} {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	var out id
	h.Sum(out[:0])
	return out
}

// Config bounds a Cache.
type Config struct {
	MaxEntries       int   // all tenants; default 10 000
	MaxBytes         int64 // all tenants; default 64 MiB
	TenantMaxEntries int   // one tenant's share; default MaxEntries
	TenantMaxBytes   int64 // one tenant's share; default MaxBytes
}

// Defaults of [Config].
const (
	DefaultMaxEntries = 10_000
	DefaultMaxBytes   = 64 << 20
)

// entryOverhead is what an entry costs beyond its value's size: the key,
// list elements and map slot, charged so that many tiny results still meet
// MaxBytes.
const entryOverhead = 256

// Stats counts what a Cache did.
type Stats struct {
	Hits, Misses, Evictions, Expirations, Shared uint64
	Entries                                      int
	Bytes                                        int64
}

// Cache holds successful results of cacheable tool calls, each until its
// TTL, bounded by entries and bytes overall and per tenant, evicting the
// least recently used; expiry is lazy (an expired entry found is dropped
// and counts as a miss). Concurrent calls with one key run once (see Do).
// It is safe for concurrent use.
type Cache struct {
	cfg Config

	mu      sync.Mutex
	lru     *list.List // of *entry, most recent first
	entries map[id]*entry
	tenants map[string]*tenantShare
	digests map[string]map[*entry]struct{}
	bytes   int64
	flights map[id]*flight
	stats   Stats
}

type entry struct {
	id      id
	key     Key
	value   any
	size    int64
	expires time.Time
	elem    *list.Element // in Cache.lru
	telem   *list.Element // in tenantShare.lru
}

type tenantShare struct {
	lru   *list.List
	bytes int64
}

// New returns an empty Cache.
func New(cfg Config) *Cache {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.TenantMaxEntries <= 0 || cfg.TenantMaxEntries > cfg.MaxEntries {
		cfg.TenantMaxEntries = cfg.MaxEntries
	}
	if cfg.TenantMaxBytes <= 0 || cfg.TenantMaxBytes > cfg.MaxBytes {
		cfg.TenantMaxBytes = cfg.MaxBytes
	}
	return &Cache{cfg: cfg, lru: list.New(), entries: make(map[id]*entry), tenants: make(map[string]*tenantShare),
		digests: make(map[string]map[*entry]struct{}), flights: make(map[id]*flight)}
}

// Stats returns the counts so far.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries, s.Bytes = len(c.entries), c.bytes
	return s
}

// Get returns the live entry for k.
func (c *Cache) Get(k Key) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(k.id())
}

func (c *Cache) getLocked(i id) (any, bool) {
	e, ok := c.entries[i]
	if !ok {
		return nil, false
	}
	if !time.Now().Before(e.expires) {
		c.removeLocked(e)
		c.stats.Expirations++
		return nil, false
	}
	c.lru.MoveToFront(e.elem)
	c.tenants[e.key.Tenant].lru.MoveToFront(e.telem)
	return e.value, true
}

// Put stores value for k until ttl from now, evicting least recently used
// entries of k's tenant, then of anyone, to stay within the bounds. A
// value larger than a bound is not stored.
func (c *Cache) Put(k Key, value any, size int64, ttl time.Duration) {
	size, ok := c.charge(k, size, ttl)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, value, size, ttl)
}

func (c *Cache) putLocked(k Key, value any, size int64, ttl time.Duration) {
	i := k.id()
	if old, ok := c.entries[i]; ok {
		c.removeLocked(old)
	}
	t := c.tenants[k.Tenant]
	if t == nil {
		t = &tenantShare{lru: list.New()}
		c.tenants[k.Tenant] = t
	}
	for t.lru.Len() > 0 && (t.lru.Len()+1 > c.cfg.TenantMaxEntries || t.bytes+size > c.cfg.TenantMaxBytes) {
		c.evictLocked(t.lru.Back().Value.(*entry))
	}
	for c.lru.Len() > 0 && (c.lru.Len()+1 > c.cfg.MaxEntries || c.bytes+size > c.cfg.MaxBytes) {
		c.evictLocked(c.lru.Back().Value.(*entry))
	}
	e := &entry{id: i, key: k, value: value, size: size, expires: time.Now().Add(ttl)}
	e.elem = c.lru.PushFront(e)
	e.telem = t.lru.PushFront(e)
	t.bytes += size
	c.bytes += size
	c.entries[i] = e
	d := c.digests[k.Digest]
	if d == nil {
		d = make(map[*entry]struct{})
		c.digests[k.Digest] = d
	}
	d[e] = struct{}{}
}

// charge is what an entry of k with a value of size costs, and whether
// it can be stored at all.
func (c *Cache) charge(k Key, size int64, ttl time.Duration) (int64, bool) {
	size += entryOverhead + int64(len(k.Args)+len(k.Tenant)+len(k.Digest)+len(k.Tool)+len(k.Grants))
	return size, ttl > 0 && size <= c.cfg.TenantMaxBytes
}

// DropDigest removes every entry of the module with digest d: call it when
// a module version stops being served.
func (c *Cache) DropDigest(d string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.digests[d])
	for e := range c.digests[d] {
		c.removeLocked(e)
	}
	return n
}

func (c *Cache) evictLocked(e *entry) {
	c.removeLocked(e)
	c.stats.Evictions++
}

func (c *Cache) removeLocked(e *entry) {
	delete(c.entries, e.id)
	c.lru.Remove(e.elem)
	t := c.tenants[e.key.Tenant]
	t.lru.Remove(e.telem)
	t.bytes -= e.size
	if t.lru.Len() == 0 {
		delete(c.tenants, e.key.Tenant)
	}
	c.bytes -= e.size
	if d := c.digests[e.key.Digest]; d != nil {
		delete(d, e)
		if len(d) == 0 {
			delete(c.digests, e.key.Digest)
		}
	}
}

// Outcome is what a run of the tool gave: a value, its size, whether it may
// be stored (a successful result of a call that did not elicit input), and
// for how long.
type Outcome struct {
	Value     any
	Size      int64
	Cacheable bool
	TTL       time.Duration
	Err       error
}

// flight is one run of a key that callers share.
type flight struct {
	done    chan struct{}
	out     Outcome
	callers int
	cancel  context.CancelFunc
}

// Do returns the live result for k (hit true), or runs run once for all
// concurrent callers of k and stores its outcome when it is cacheable.
//
// run gets a context of its own, cancelled only when every caller waiting
// for it has gone: each caller keeps its own cancellation (Do returns
// ctx.Err() when ctx ends first) and the run stops when the last one goes.
// A caller that shared a run whose outcome may not be stored (an error, a
// call that elicited input) runs the tool itself, once, rather than take a
// result that was not meant for reuse.
func (c *Cache) Do(ctx context.Context, k Key, run func(context.Context) Outcome) (out Outcome, hit bool) {
	i := k.id()
	c.mu.Lock()
	if v, ok := c.getLocked(i); ok {
		c.stats.Hits++
		c.mu.Unlock()
		return Outcome{Value: v, Cacheable: true}, true
	}
	c.stats.Misses++
	f, joined := c.flights[i]
	if joined {
		c.stats.Shared++
	} else {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		c.flights[i] = f
		go c.fly(fctx, i, k, f, run)
	}
	f.callers++
	c.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		c.mu.Lock()
		f.callers--
		if f.callers == 0 {
			f.cancel()
		}
		c.mu.Unlock()
		return Outcome{Err: ctx.Err()}, false
	}
	if joined && (!f.out.Cacheable || f.out.Err != nil) {
		return run(ctx), false
	}
	return f.out, false
}

// fly runs one flight; its goroutine ends with the run, which ends when
// every caller has gone (fctx is cancelled) or on its own.
func (c *Cache) fly(fctx context.Context, i id, k Key, f *flight, run func(context.Context) Outcome) {
	out := run(fctx)
	abandoned := fctx.Err() != nil
	f.cancel()
	c.mu.Lock()
	if size, ok := c.charge(k, out.Size, out.TTL); ok && out.Err == nil && out.Cacheable && !abandoned {
		c.putLocked(k, out.Value, size, out.TTL)
	}
	delete(c.flights, i)
	f.out = out
	c.mu.Unlock()
	close(f.done)
}
