package taskengine

import (
	"context"
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkRoundTrip measures Submit → work completes → Wait returns.
func BenchmarkRoundTrip(b *testing.B) {
	e := newTestEngine(b, Config{})
	work := returning(Outcome{Value: "v", Size: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tk, err := e.Submit(context.Background(), "alice", SubmitOptions{}, work)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := e.Wait(ctx, "alice", tk.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetParallel measures Get of retained tasks by concurrent callers.
func BenchmarkGetParallel(b *testing.B) {
	e := newTestEngine(b, Config{})
	const n = 1000
	ids := make([]string, n)
	for i := range ids {
		owner := "owner" + strconv.Itoa(i%10)
		tk, err := e.Submit(context.Background(), owner, SubmitOptions{}, returning(Outcome{}))
		if err != nil {
			b.Fatal(err)
		}
		mustWait(b, e, owner, tk.ID)
		ids[i] = tk.ID
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := e.Get(context.Background(), "owner"+strconv.Itoa(i%10), ids[i]); err != nil {
				b.Fatal(err)
			}
			i = (i + 1) % n
		}
	})
}

// BenchmarkRetainedTaskMemory reports the heap held per finished, retained
// task (empty result value; IDs, snapshot state, indexes and LRU entry).
func BenchmarkRetainedTaskMemory(b *testing.B) {
	const n = 10000
	work := returning(Outcome{})
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		e, err := New(Config{MaxTasks: n, MaxRunningPerOwner: n})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			owner := "owner" + strconv.Itoa(i%100)
			tk, err := e.Submit(context.Background(), owner, SubmitOptions{}, work)
			if err != nil {
				b.Fatal(err)
			}
			mustWait(b, e, owner, tk.ID)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "bytes/task")
		runtime.KeepAlive(e)
		e.Close()
		b.StartTimer()
	}
}
