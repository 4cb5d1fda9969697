package resultcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func key(tenant, digest, args string) Key {
	return Key{Tenant: tenant, Digest: digest, Tool: "t", Args: []byte(args)}
}

func TestGetPutExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{})
		c.Put(key("a", "d1", "{}"), "v", 1, time.Minute)
		if v, ok := c.Get(key("a", "d1", "{}")); !ok || v != "v" {
			t.Fatalf("Get = %v, %v", v, ok)
		}
		for _, miss := range []Key{key("b", "d1", "{}"), key("a", "d2", "{}"), key("a", "d1", `{"x":1}`), {Tenant: "a", Digest: "d1", Tool: "t", Args: []byte("{}"), Grants: "g"}} {
			if _, ok := c.Get(miss); ok {
				t.Errorf("Get(%+v) hit an entry of another key", miss)
			}
		}
		time.Sleep(time.Minute)
		if _, ok := c.Get(key("a", "d1", "{}")); ok {
			t.Error("an entry outlived its TTL")
		}
		if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Expirations != 1 {
			t.Errorf("stats %+v, want the expired entry gone", s)
		}
	})
}

// Key fields cannot run into each other: ("ab","c") and ("a","bc") differ.
func TestKeyFieldsDoNotCollide(t *testing.T) {
	if (Key{Tenant: "ab", Digest: "c"}).id() == (Key{Tenant: "a", Digest: "bc"}).id() {
		t.Fatal("length-prefixed fields collided")
	}
}

func TestBoundsAndTenantShares(t *testing.T) {
	c := New(Config{MaxEntries: 10, TenantMaxEntries: 4})
	c.Put(key("b", "d", "keep"), "b", 1, time.Hour)
	for i := range 100 {
		c.Put(key("a", "d", fmt.Sprint(i)), i, 1, time.Hour)
	}
	if _, ok := c.Get(key("b", "d", "keep")); !ok {
		t.Error("tenant a's 100 entries evicted tenant b's")
	}
	if s := c.Stats(); s.Entries != 5 || s.Evictions != 96 {
		t.Errorf("stats %+v, want 4 of a's and b's one, 96 evictions", s)
	}
	for i := 96; i < 100; i++ { // the most recent of a's survive
		if _, ok := c.Get(key("a", "d", fmt.Sprint(i))); !ok {
			t.Errorf("a's entry %d evicted, want the 4 most recent kept", i)
		}
	}
	// Bytes: a value that does not fit a share is not stored; others are
	// evicted least recently used first.
	c = New(Config{MaxBytes: 3 * (entryOverhead + 100)})
	c.Put(key("a", "d", "big"), "x", 10*entryOverhead, time.Hour)
	if _, ok := c.Get(key("a", "d", "big")); ok {
		t.Error("a value over the byte bound was stored")
	}
	for i := range 5 {
		c.Put(key("a", "d", fmt.Sprint(i)), i, 50, time.Hour)
	}
	if s := c.Stats(); s.Bytes > 3*(entryOverhead+100) || s.Entries != 3 {
		t.Errorf("stats %+v, want 3 entries within %d bytes", s, 3*(entryOverhead+100))
	}
}

func TestDropDigest(t *testing.T) {
	c := New(Config{})
	c.Put(key("a", "old", "1"), 1, 1, time.Hour)
	c.Put(key("b", "old", "2"), 2, 1, time.Hour)
	c.Put(key("a", "new", "1"), 3, 1, time.Hour)
	if n := c.DropDigest("old"); n != 2 {
		t.Errorf("DropDigest = %d, want 2", n)
	}
	if _, ok := c.Get(key("a", "old", "1")); ok {
		t.Error("an entry of the dropped digest survived")
	}
	if _, ok := c.Get(key("a", "new", "1")); !ok {
		t.Error("an entry of another digest was dropped")
	}
}

// Concurrent identical calls run once; later calls hit without running.
func TestDoSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{})
		var runs atomic.Int32
		release := make(chan struct{})
		run := func(context.Context) Outcome {
			runs.Add(1)
			<-release
			return Outcome{Value: "r", Size: 1, Cacheable: true, TTL: time.Minute}
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if out, _ := c.Do(context.Background(), key("a", "d", "{}"), run); out.Value != "r" {
					t.Errorf("Do = %+v", out)
				}
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if out, hit := c.Do(context.Background(), key("a", "d", "{}"), run); !hit || out.Value != "r" {
			t.Errorf("after the flight: %+v hit=%v, want a hit", out, hit)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("%d runs, want 1", n)
		}
		if s := c.Stats(); s.Hits != 1 || s.Misses != 8 || s.Shared != 7 {
			t.Errorf("stats %+v", s)
		}
	})
}

// Each caller keeps its own cancellation; the run stops only when the last
// caller has gone, and an abandoned run is not stored.
func TestDoCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{})
		stopped := make(chan struct{})
		run := func(ctx context.Context) Outcome {
			<-ctx.Done()
			close(stopped)
			return Outcome{Value: "late", Cacheable: true, TTL: time.Minute}
		}
		ctx1, cancel1 := context.WithCancel(context.Background())
		ctx2, cancel2 := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		go func() { out, _ := c.Do(ctx1, key("a", "d", "{}"), run); errs <- out.Err }()
		go func() { out, _ := c.Do(ctx2, key("a", "d", "{}"), run); errs <- out.Err }()
		synctest.Wait()
		cancel1()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("first caller: %v, want its own cancellation", err)
		}
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("the run stopped while a caller still waited")
		default:
		}
		cancel2()
		<-errs
		<-stopped
		synctest.Wait()
		if _, ok := c.Get(key("a", "d", "{}")); ok {
			t.Error("an abandoned run's outcome was stored")
		}
	})
}

// Errors and non-cacheable outcomes are never stored, and a caller that
// shared such a run runs the tool itself rather than reuse it.
func TestDoNeverStoresFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, out := range []Outcome{
			{Err: errors.New("boom"), Cacheable: true, TTL: time.Minute},
			{Value: "elicited", Cacheable: false, TTL: time.Minute},
		} {
			c := New(Config{})
			var runs atomic.Int32
			release := make(chan struct{})
			run := func(context.Context) Outcome { runs.Add(1); <-release; return out }
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() { c.Do(context.Background(), key("a", "d", "{}"), run) })
			}
			synctest.Wait()
			close(release)
			wg.Wait()
			if s := c.Stats(); s.Entries != 0 {
				t.Errorf("%+v was stored", out)
			}
			if n := runs.Load(); n != 3 {
				t.Errorf("%+v: %d runs, want 3 (the shared one, then one per joiner)", out, n)
			}
		}
	})
}
