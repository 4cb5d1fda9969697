package main

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A side is one contender of a figure: op runs one operation as client
// number i of clients (each client is one goroutine; ops of one client never
// overlap).
type side struct {
	name    string
	clients int
	op      func(client int) error
}

// A row is one line of the table: the median of side num against the
// median of side den.
type row struct {
	figure string // "1", "2", …
	label  string // what is compared
	num    string // wasmtask's side
	den    string // the reference side
	goal   string // "" when none
}

// A figure is a set of sides measured interleaved, and the rows read from
// them. setup builds the sides (servers, plugins, sessions); close ends them.
type figure struct {
	id, title string
	setup     func() ([]side, []row, func(), error)
}

// measured is one side's samples: ns per op, one per round.
type measured struct {
	samples []float64
}

func (m measured) median() float64 {
	s := slices.Clone(m.samples)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runBatch runs sd for about d (each client at least minOps ops) and returns
// the wall time per op over all clients: at one client the latency, at
// several the inverse of the throughput.
func runBatch(sd side, d time.Duration, minOps int) (float64, error) {
	var (
		stop  atomic.Bool
		ops   atomic.Int64
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	start := time.Now()
	deadline := start.Add(d)
	for c := range sd.clients {
		wg.Go(func() {
			for n := 0; ; n++ {
				if n >= minOps && (stop.Load() || time.Now().After(deadline)) {
					return
				}
				if err := sd.op(c); err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
					stop.Store(true)
					return
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return 0, fmt.Errorf("%s: %w", sd.name, first)
	}
	return float64(elapsed.Nanoseconds()) / float64(ops.Load()), nil
}

// measure runs every side of a figure once to warm up, then rounds times,
// interleaved: in each round every side runs one batch, in an order that
// alternates between rounds so that no side always runs first.
func measure(sides []side, rounds int, d time.Duration, minOps int) (map[string]*measured, error) {
	out := make(map[string]*measured, len(sides))
	for _, sd := range sides {
		if _, err := runBatch(sd, d/4, 1); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		out[sd.name] = &measured{}
	}
	for r := range rounds {
		order := slices.Clone(sides)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, sd := range order {
			ns, err := runBatch(sd, d, minOps)
			if err != nil {
				return nil, err
			}
			out[sd.name].samples = append(out[sd.name].samples, ns)
		}
	}
	return out, nil
}
