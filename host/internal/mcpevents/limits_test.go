package mcpevents

import (
	"errors"
	"testing"
	"time"
)

// Limiter: at most MaxOpenElicits open questions, a burst of
// SessionElicitBurst, then one per SessionElicitEvery.
func TestElicitLimiter(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	for i := range MaxOpenElicits {
		if err := l.begin(t0); err != nil {
			t.Fatalf("question %d: %v", i, err)
		}
	}
	if err := l.begin(t0); !errors.Is(err, errElicitsOpen) {
		t.Fatalf("question over the open bound: %v, want errElicitsOpen", err)
	}
	for range MaxOpenElicits {
		l.end()
	}
	for i := MaxOpenElicits; i < SessionElicitBurst; i++ {
		if err := l.begin(t0); err != nil {
			t.Fatalf("question %d of the burst: %v", i, err)
		}
		l.end()
	}
	if err := l.begin(t0); !errors.Is(err, errElicitRate) {
		t.Fatalf("question past the burst: %v, want errElicitRate", err)
	}
	if err := l.begin(t0.Add(SessionElicitEvery / 2)); !errors.Is(err, errElicitRate) {
		t.Fatalf("question before a token returned: %v, want errElicitRate", err)
	}
	if err := l.begin(t0.Add(SessionElicitEvery)); err != nil {
		t.Fatalf("question once a token returned: %v", err)
	}
	l.end()
	later := t0.Add(100 * SessionElicitEvery)
	for i := range SessionElicitBurst {
		if err := l.begin(later); err != nil {
			t.Fatalf("question %d after a long pause: %v", i, err)
		}
		l.end()
	}
}
