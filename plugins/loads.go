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
	ErrLoading = errors.New("plugins: module is still loading")
	// ErrLoadTimeout marks a load that passed [LoadConfig].Timeout. It is
	// remembered against the digest like any other load failure.
	ErrLoadTimeout = errors.New("plugins: module took too long to load")
)

// LoadConfig bounds the loads a [Loads] runs.
type LoadConfig struct {
	// Workers is how many modules are loaded at once. Default 2.
	Workers int
	// Timeout bounds one module's load (the Loader's compile and describe
	// run with a context that ends then). Default 60s.
	Timeout time.Duration
}

// Defaults of [LoadConfig] fields left at zero.
const (
	DefaultLoadWorkers = 2
	DefaultLoadTimeout = 60 * time.Second
)

// Loads is a [Loader] that never makes [Build] wait: it runs the loads Build
// asks for in the background, on a bounded pool of workers, each within a
// deadline, smallest file first, so that a slow or huge module delays only
// itself. Build gets [ErrLoading] for a module whose load has not finished
// (the previous version of the module, if any, keeps serving) and the result
// from the first Build after it has; [Loads.Finished] says when to build
// again.
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

	mu      sync.Mutex
	work    *sync.Cond             // signalled when queue grows or Loads closes
	queue   []*loadJob[C]          // waiting for a worker, smallest file first
	jobs    map[string]*loadJob[C] // by digest: queued, running or finished and not yet taken
	closed  bool
	running int
}

// loadJob is one digest's load.
type loadJob[C any] struct {
	m        Module
	started  time.Time // zero while queued
	done     bool
	dropped  bool // no snapshot wants it any more: its result is released
	cancel   context.CancelFunc
	compiled C
	manifest *abi.Manifest
	err      error
}

// NewLoads starts cfg.Workers workers that load with inner. Close stops
// them.
func NewLoads[C any](inner Loader[C], cfg LoadConfig) *Loads[C] {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultLoadWorkers
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultLoadTimeout
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Loads[C]{inner: inner, cfg: cfg, finished: make(chan struct{}, 1), ctx: ctx, stop: stop,
		jobs: make(map[string]*loadJob[C])}
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
	ld, err := p.take(m)
	return ld.Compiled, ld.Manifest, err
}

// Release implements [Loader].
func (p *Loads[C]) Release(c C) { p.inner.Release(c) }

// take returns m's load when it has finished (the caller then owns the
// compiled module), or an error wrapping ErrLoading after queueing it if
// it was not queued yet.
func (p *Loads[C]) take(m Module) (Loaded[C], error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Loaded[C]{}, fmt.Errorf("%w: %w", ErrLoad, context.Canceled)
	}
	j, ok := p.jobs[m.Digest]
	switch {
	case !ok:
		j = &loadJob[C]{m: m}
		p.jobs[m.Digest] = j
		i, _ := slices.BinarySearchFunc(p.queue, j, bySize)
		p.queue = slices.Insert(p.queue, i, j)
		p.work.Signal()
		return Loaded[C]{}, fmt.Errorf("%w (queued)", ErrLoading)
	case !j.done && j.started.IsZero():
		return Loaded[C]{}, fmt.Errorf("%w (queued)", ErrLoading)
	case !j.done:
		return Loaded[C]{}, fmt.Errorf("%w (for %v)", ErrLoading, time.Since(j.started).Round(time.Second))
	}
	delete(p.jobs, m.Digest)
	if j.err != nil {
		return Loaded[C]{}, j.err
	}
	return Loaded[C]{Module: m, Manifest: j.manifest, Compiled: j.compiled}, nil
}

// bySize orders the queue: smaller files first, then by name.
func bySize[C any](a, b *loadJob[C]) int {
	return cmp.Or(cmp.Compare(a.m.Size, b.m.Size), cmp.Compare(a.m.Name, b.m.Name), cmp.Compare(a.m.Digest, b.m.Digest))
}

// Keep forgets the loads of digests snap does not hold: a queued one is
// dropped, a running one is cancelled and its result released, a finished
// one is released.
func (p *Loads[C]) Keep(snap *Snapshot) {
	want := make(map[string]bool)
	for _, m := range snap.Modules() {
		want[m.Digest] = true
	}
	p.mu.Lock()
	var release []C
	for d, j := range p.jobs {
		if want[d] {
			continue
		}
		delete(p.jobs, d)
		j.dropped = true
		switch {
		case j.done:
			if j.err == nil {
				release = append(release, j.compiled)
			}
		case j.started.IsZero():
			p.queue = slices.DeleteFunc(p.queue, func(q *loadJob[C]) bool { return q == j })
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
	return len(p.queue) + p.running
}

// Close cancels the loads, waits for the workers and releases every result
// not taken.
func (p *Loads[C]) Close() {
	p.mu.Lock()
	p.closed = true
	p.queue = nil
	p.work.Broadcast()
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
	p.mu.Lock()
	var release []C
	for d, j := range p.jobs {
		delete(p.jobs, d)
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
		for len(p.queue) == 0 && !p.closed {
			p.work.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		j := p.queue[0]
		p.queue = p.queue[1:]
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.Timeout)
		j.started, j.cancel = time.Now(), cancel
		p.running++
		p.mu.Unlock()

		c, man, err := p.run(ctx, j.m)
		cancel()

		p.mu.Lock()
		p.running--
		j.done, j.compiled, j.manifest, j.err = true, c, man, err
		drop := j.dropped || p.closed
		if drop && p.jobs[j.m.Digest] == j {
			// Keep has already forgotten a dropped job, and a later
			// take may have queued the same digest again: that job
			// is not this one's to delete.
			delete(p.jobs, j.m.Digest)
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
// direct loads are: ErrLoadTimeout when the deadline passed, a retry when
// the file changed or Loads stopped.
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
