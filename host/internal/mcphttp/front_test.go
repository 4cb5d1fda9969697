package mcphttp

import (
	"testing"
	"time"
)

func TestTokenBucket(t *testing.T) {
	var l rateLimits
	t0 := time.Unix(1000, 0)
	for i := range 2 {
		if ok, _ := l.take("a", 1, 2, t0); !ok {
			t.Fatalf("request %d within the burst refused", i)
		}
	}
	ok, wait := l.take("a", 1, 2, t0)
	if ok || wait != time.Second {
		t.Fatalf("past the burst: ok=%v wait=%v, want refused, 1s", ok, wait)
	}
	if ok, _ := l.take("b", 1, 2, t0); !ok {
		t.Error("another tenant's bucket was spent")
	}
	if ok, _ := l.take("a", 1, 2, t0.Add(time.Second)); !ok {
		t.Error("a refilled token refused")
	}
	if ok, _ := l.take("a", 1, 2, t0.Add(time.Second)); ok {
		t.Error("a token spent twice")
	}
}
