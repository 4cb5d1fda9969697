package main

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := (measured{samples: tc.in}).median(); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRatioIsMedianOfRounds: a slow round slows both sides of it, and the
// figure's ratio follows the rounds, not the two medians.
func TestRatioIsMedianOfRounds(t *testing.T) {
	r := result{samples: [2][]float64{{2, 20, 2.2}, {1, 10, 1}}, roundRatio: 2}
	if got := r.ratio(); got != 2 {
		t.Errorf("ratio = %v, want 2", got)
	}
	if got := (result{wasmtask: 3, reference: 2}).ratio(); got != 1.5 {
		t.Errorf("ratio of an untimed result = %v, want 1.5", got)
	}
}

func TestMeasureRunsEverySideEveryRound(t *testing.T) {
	var a, b atomic.Int64
	sides := []side{
		{name: "a", clients: 2, op: func(int) error { a.Add(1); return nil }},
		{name: "b", clients: 1, op: func(int) error { b.Add(1); return nil }},
	}
	m, err := measure(sides, 3, time.Millisecond, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if n := len(m[name].samples); n != 3 {
			t.Errorf("side %s has %d samples, want 3", name, n)
		}
	}
	// At least minOps per client per round, plus the warm-up's op per client.
	if got, want := a.Load(), int64(2*(3*5+1)); got < want {
		t.Errorf("side a ran %d ops, want at least %d", got, want)
	}
	if got, want := b.Load(), int64(3*5+1); got < want {
		t.Errorf("side b ran %d ops, want at least %d", got, want)
	}
}

func TestMeasureStopsAtAnError(t *testing.T) {
	boom := errors.New("boom")
	_, err := measure([]side{{name: "x", clients: 4, op: func(int) error { return boom }}}, 2, time.Millisecond, 1)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}
