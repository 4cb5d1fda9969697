package wasmrt

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestElicitBudget: a call asks at most elicitBurst questions at once,
// then one per elicitEvery, and never more than maxElicits.
func TestElicitBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCallState(&events{}, 100)
		asked := 0
		for range 100 {
			if s.mayElicit() {
				asked++
			}
		}
		if asked != elicitBurst {
			t.Fatalf("asked %d at once, want %d", asked, elicitBurst)
		}
		for range 1000 {
			time.Sleep(elicitEvery)
			if s.mayElicit() {
				asked++
			}
		}
		if asked != maxElicits {
			t.Errorf("asked %d in all, want %d", asked, maxElicits)
		}
	})
}
