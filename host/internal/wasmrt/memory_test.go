package wasmrt

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestReservation: a call may make the host allocate its memory limit
// (capped by the runtime's ceiling) plus its output and log buffers; the
// memory limit covers linear memory, the stack, tables, globals and the
// instance, so that the module's own size does not change the figure.
func TestReservation(t *testing.T) {
	r := newRuntime(t, Config{MaxMemoryMiB: 32})
	m := load(t, r, "ok")
	lim := Limits{MemoryMiB: 16, MaxOutputBytes: 1 << 20, MaxLogBytes: 64 << 10}
	io := uint64(2<<20 + 3*64<<10)
	if got, want := m.Reservation(lim), uint64(16<<20)+io; got != want {
		t.Errorf("Reservation(16 MiB) = %d, want %d", got, want)
	}
	lim.MemoryMiB = 64
	if got, want := m.Reservation(lim), uint64(32<<20)+io; got != want {
		t.Errorf("Reservation(64 MiB under a 32 MiB ceiling) = %d, want %d", got, want)
	}
}

// TestPoolRefusesStaticOverLimit: a module whose tables alone take more
// than the call's memory limit is refused before it runs, naming what
// takes the memory; under a limit that holds them it runs.
func TestPoolRefusesStaticOverLimit(t *testing.T) {
	for _, interp := range []bool{false, true} {
		r := newRuntime(t, Config{Interpreter: interp})
		m := load(t, r, "tablegrow")
		_, err := m.Call(context.Background(), "grow", nil, with(Limits{MemoryMiB: 1}), nil)
		var ge *GuestError
		if !errors.As(err, &ge) || ge.Kind != KindOutOfMemory || !strings.Contains(err.Error(), "for tables, globals and the instance") {
			t.Errorf("interpreter=%v: under 1 MiB: got %v, want out of memory naming tables", interp, err)
		}
		if _, err := m.Call(context.Background(), "grow", nil, testLimits, nil); err != nil {
			t.Errorf("interpreter=%v: under %d MiB: %v", interp, testLimits.MemoryMiB, err)
		}
	}
}
