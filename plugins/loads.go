package plugins

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

// Errors of [Loads].
var (
	// ErrLoading marks a module whose load has not finished: [Build]
	// reports it as a problem and does not remember it against the digest;
	// a later Build takes the result.
	ErrLoading = errors.New("module is still loading")
	// ErrLoadTimeout marks a load that passed [LoadConfig].Timeout. It is
	// remembered against the digest like any other load failure.
	ErrLoadTimeout = errors.New("module took too long to load")
)

// LoadConfig bounds the loads a [Loads] runs.
type LoadConfig struct {
	// Workers is how many modules are loaded at once (the load slots).
	// Default 2.
	Workers int
	// Timeout bounds one module's load (the Loader's compile and describe
	// run with a context that ends then). Default 60s.
	Timeout time.Duration
	// MaxFailed bounds the failed loads remembered by source and digest
	// (a module whose content failed is not loaded again, even after its
	// file was removed and put back, until its content changes); past it
	// the oldest are forgotten. Default 4096.
	MaxFailed int
}

// Defaults of [LoadConfig] fields left at zero.
const (
	DefaultLoadWorkers = 2
	DefaultLoadTimeout = 60 * time.Second
	DefaultMaxFailed   = 4096
)

// Loads is a [Loader] that never makes [Build] wait: it runs the loads Build
// asks for in the background, on a bounded pool of workers (the load slots),
// each within a deadline, so that a slow or huge module delays only itself.
// Build gets [ErrLoading] for a module whose load has not finished (the
// previous version of the module, if any, keeps serving) and the result
// from the first Build after it has; [Loads.Finished] says when to build
// again.
//
// Loads is fair between sources ([Module].Source: a directory, a tenant's
// modules): each source has a queue of its own, and a slot that frees goes
// to the source with a queued module that runs the fewest loads, then to
// the one that started a load least recently. So a source that holds every
// slot with slow modules gives the next free slot to any other source that
// waits: another source's module waits for at most one load of it. Within a
// source, modules that [Rules].Known names go first, then those whose
// earlier versions never failed to load, each smallest file first. A
// content that failed to load is remembered by source and digest
// ([LoadConfig].MaxFailed of them) and never loaded again: the next Build
// gets the same failure at once, also after the file was removed and put
// back, until its content changes.
//
// Loads reads a module's bytes only when a worker takes it, so a queue of
// modules holds no content. It is safe for concurrent use; Close stops it.
type Loads[C any] struct {
	inner    Loader[C]
	cfg      LoadConfig
	finished chan struct{} // capacity 1: a load finished since the last receive
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup

	mu          sync.Mutex
	work        *sync.Cond                // signalled when a queue grows or Loads closes
	sources     map[string]*loadSource[C] // those with a queued or running load
	jobs        map[jobKey]*loadJob[C]    // queued, running or finished and not yet taken
	failed      fifoMap[jobKey, error]    // contents that failed to load
	failedNames fifoMap[jobKey, struct{}] // (source, module name) whose load failed once
	closed      bool
	running     int
	starts      uint64 // loads started, to order sources by their latest start
}

// jobKey is a load's source and digest (or, in failedNames, module name).
type jobKey struct{ source, key string }

// loadSource is one source's queue and share of the slots.
type loadSource[C any] struct {
	name      string
	queue     []*loadJob[C] // waiting for a slot, in jobOrder
	running   int
	lastStart uint64 // Loads.starts when this source last started a load
}

// loadJob is one digest's load.
type loadJob[C any] struct {
	m        Module
	known    bool      // Rules.Known names the module
	retry    bool      // an earlier version of the module failed to load
	started  time.Time // zero while queued
	done     bool
	dropped  bool // no snapshot wants it any more: its result is released
	cancel   context.CancelFunc
	compiled C
	manifest *abi.Manifest
	err      error
}

func (j *loadJob[C]) key() jobKey { return jobKey{j.m.Source, j.m.Digest} }

// NewLoads starts cfg.Workers workers that load with inner. Close stops
// them.
func NewLoads[C any](inner Loader[C], cfg LoadConfig) *Loads[C] {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultLoadWorkers
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultLoadTimeout
	}
	if cfg.MaxFailed <= 0 {
		cfg.MaxFailed = DefaultMaxFailed
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Loads[C]{inner: inner, cfg: cfg, finished: make(chan struct{}, 1), ctx: ctx, stop: stop,
		sources: make(map[string]*loadSource[C]), jobs: make(map[jobKey]*loadJob[C]),
		failed: newFIFOMap[jobKey, error](cfg.MaxFailed), failedNames: newFIFOMap[jobKey, struct{}](cfg.MaxFailed)}
	p.work = sync.NewCond(&p.mu)
	p.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go p.worker()
	}
	return p
}

// Finished receives a value after one or more loads have finished; build
// again to take their results.
func (p *Loads[C]) Finished() <-chan struct{} { return p.finished }

// Load implements [Loader]: it is take, and never waits. Build calls take
// itself, without reading the module's bytes.
func (p *Loads[C]) Load(_ context.Context, m Module, _ []byte) (C, *abi.Manifest, error) {
	ld, err := p.take(m, false)
	return ld.Compiled, ld.Manifest, err
}

// Release implements [Loader].
func (p *Loads[C]) Release(c C) { p.inner.Release(c) }

// take returns m's load when it has finished (the caller then owns the
// compiled module), the failure remembered for m's content, or an error
// wrapping ErrLoading after queueing it if it was not queued yet (known:
// [Rules].Known names it).
func (p *Loads[C]) take(m Module, known bool) (Loaded[C], error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Loaded[C]{}, fmt.Errorf("%w: %w", ErrLoad, context.Canceled)
	}
	k := jobKey{m.Source, m.Digest}
	j, ok := p.jobs[k]
	switch {
	case !ok:
		if err, failed := p.failed.get(k); failed {
			return Loaded[C]{}, err
		}
		_, retry := p.failedNames.get(jobKey{m.Source, m.Name})
		j = &loadJob[C]{m: m, known: known, retry: retry}
		p.jobs[k] = j
		p.enqueue(j)
		p.work.Signal()
		return Loaded[C]{}, fmt.Errorf("%w (queued)", ErrLoading)
	case !j.done && j.started.IsZero():
		return Loaded[C]{}, fmt.Errorf("%w (queued)", ErrLoading)
	case !j.done:
		return Loaded[C]{}, fmt.Errorf("%w (for %v)", ErrLoading, time.Since(j.started).Round(time.Second))
	}
	delete(p.jobs, k)
	if j.err != nil {
		return Loaded[C]{}, j.err
	}
	return Loaded[C]{Module: m, Manifest: j.manifest, Compiled: j.compiled}, nil
}

// enqueue puts j in its source's queue, in jobOrder. mu is held.
func (p *Loads[C]) enqueue(j *loadJob[C]) {
	src := p.sources[j.m.Source]
	if src == nil {
		src = &loadSource[C]{name: j.m.Source}
		p.sources[j.m.Source] = src
	}
	i, _ := slices.BinarySearchFunc(src.queue, j, jobOrder)
	src.queue = slices.Insert(src.queue, i, j)
}

// jobOrder orders a source's queue: modules the rules know first, then
// those that never failed to load, then smaller files first, then by name.
func jobOrder[C any](a, b *loadJob[C]) int {
	return cmp.Or(cmpBool(b.known, a.known), cmpBool(a.retry, b.retry),
		cmp.Compare(a.m.Size, b.m.Size), cmp.Compare(a.m.Name, b.m.Name), cmp.Compare(a.m.Digest, b.m.Digest))
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// next takes the job the next free slot runs: from the source with a
// queued job that runs the fewest loads, then the one whose latest load
// started first (then by name, for a stable order), the first of its
// queue; nil when nothing is queued. mu is held.
func (p *Loads[C]) next() *loadJob[C] {
	var pick *loadSource[C]
	for _, src := range p.sources {
		if len(src.queue) == 0 {
			continue
		}
		if pick == nil || cmp.Or(cmp.Compare(src.running, pick.running), cmp.Compare(src.lastStart, pick.lastStart), cmp.Compare(src.name, pick.name)) < 0 {
			pick = src
		}
	}
	if pick == nil {
		return nil
	}
	j := pick.queue[0]
	pick.queue = pick.queue[1:]
	pick.running++
	p.starts++
	pick.lastStart = p.starts
	return j
}

// dequeue removes a queued j from its source's queue. mu is held.
func (p *Loads[C]) dequeue(j *loadJob[C]) {
	src := p.sources[j.m.Source]
	src.queue = slices.DeleteFunc(src.queue, func(q *loadJob[C]) bool { return q == j })
	p.forgetIdle(src)
}

// forgetIdle drops src once it has nothing queued or running, so that
// sources are bounded by those with work. mu is held.
func (p *Loads[C]) forgetIdle(src *loadSource[C]) {
	if len(src.queue) == 0 && src.running == 0 {
		delete(p.sources, src.name)
	}
}

// Keep forgets the loads of snap's source whose digests snap does not
// hold: a queued one is dropped, a running one is cancelled and its result
// released, a finished one is released. Loads of other sources are left
// alone.
func (p *Loads[C]) Keep(snap *Snapshot) {
	want := make(map[string]bool)
	for _, m := range snap.Modules() {
		want[m.Digest] = true
	}
	p.mu.Lock()
	var release []C
	for k, j := range p.jobs {
		if k.source != snap.Source() || want[k.key] {
			continue
		}
		delete(p.jobs, k)
		j.dropped = true
		switch {
		case j.done:
			if j.err == nil {
				release = append(release, j.compiled)
			}
		case j.started.IsZero():
			p.dequeue(j)
		default:
			j.cancel()
		}
	}
	p.mu.Unlock()
	for _, c := range release {
		p.inner.Release(c)
	}
}

// Loading reports how many loads are queued or running.
func (p *Loads[C]) Loading() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.running
	for _, src := range p.sources {
		n += len(src.queue)
	}
	return n
}

// Close cancels the loads, waits for the workers and releases every result
// not taken.
func (p *Loads[C]) Close() {
	p.mu.Lock()
	p.closed = true
	for _, src := range p.sources {
		src.queue = nil
	}
	p.work.Broadcast()
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
	p.mu.Lock()
	var release []C
	for k, j := range p.jobs {
		delete(p.jobs, k)
		if j.done && j.err == nil {
			release = append(release, j.compiled)
		}
	}
	p.mu.Unlock()
	for _, c := range release {
		p.inner.Release(c)
	}
}

// worker loads queued modules until Close.
func (p *Loads[C]) worker() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		var j *loadJob[C]
		for !p.closed {
			if j = p.next(); j != nil {
				break
			}
			p.work.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.Timeout)
		j.started, j.cancel = time.Now(), cancel
		p.running++
		p.mu.Unlock()

		c, man, err := p.run(ctx, j.m)
		cancel()

		p.mu.Lock()
		p.running--
		src := p.sources[j.m.Source]
		src.running--
		p.forgetIdle(src)
		j.done, j.compiled, j.manifest, j.err = true, c, man, err
		var retry retryError
		if err != nil && !errors.As(err, &retry) && p.ctx.Err() == nil {
			// The content failed: counted against it and its module.
			p.failed.put(j.key(), err)
			p.failedNames.put(jobKey{j.m.Source, j.m.Name}, struct{}{})
		}
		drop := j.dropped || p.closed
		if drop && p.jobs[j.key()] == j {
			// Keep has already forgotten a dropped job, and a later
			// take may have queued the same digest again: that job
			// is not this one's to delete.
			delete(p.jobs, j.key())
		}
		p.mu.Unlock()
		if drop {
			if err == nil {
				p.inner.Release(c)
			}
			continue
		}
		select {
		case p.finished <- struct{}{}:
		default:
		}
	}
}

// run loads one module within ctx, classifying its failure the way Build's
// direct loads are: ErrLoadTimeout when the deadline passed, a retry
// (retryError) when the file changed or Loads stopped.
func (p *Loads[C]) run(ctx context.Context, m Module) (C, *abi.Manifest, error) {
	ld, err := load(ctx, p.inner, m)
	if err == nil {
		return ld.Compiled, ld.Manifest, nil
	}
	var zero C
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && p.ctx.Err() == nil {
		return zero, nil, fmt.Errorf("%w: %w: more than %v (the operator's load timeout)", ErrLoad, ErrLoadTimeout, p.cfg.Timeout)
	}
	return zero, nil, err
}

// fifoMap is a map bounded to max entries: past it, the entry put first
// goes. Not safe for concurrent use (Loads holds its mutex).
type fifoMap[K comparable, V any] struct {
	max   int
	m     map[K]V
	order []K // keys in the order they were put; each key once
}

func newFIFOMap[K comparable, V any](max int) fifoMap[K, V] {
	return fifoMap[K, V]{max: max, m: make(map[K]V)}
}

func (f *fifoMap[K, V]) get(k K) (V, bool) {
	v, ok := f.m[k]
	return v, ok
}

// put sets k to v; a key already present keeps its place in the order.
func (f *fifoMap[K, V]) put(k K, v V) {
	if _, ok := f.m[k]; !ok {
		f.order = append(f.order, k)
	}
	f.m[k] = v
	for len(f.order) > f.max {
		delete(f.m, f.order[0])
		f.order = slices.Delete(f.order, 0, 1)
	}
}
